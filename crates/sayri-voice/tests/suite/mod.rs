pub mod echo;
pub mod engines;
pub mod harness;
pub mod quiet;
pub mod support;
pub mod voice_loop;
