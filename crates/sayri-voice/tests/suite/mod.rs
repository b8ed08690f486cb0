pub mod echo;
pub mod engines;
pub mod harness;
pub mod mic_loss;
pub mod models;
pub mod quiet;
pub mod support;
pub mod voice_loop;
