mod engine;
mod engine_core;
mod engine_fakes;
