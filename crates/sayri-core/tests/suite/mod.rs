mod engine;
mod engine_core;
mod engine_fakes;
mod permissions_broker;
mod permissions_cases;
mod permissions_common;
mod permissions_more;
mod permissions_property;
