//! Pure domain logic: no I/O here.

pub mod agents;
pub mod codeblock;
pub mod config;
pub mod context;
pub mod frame;
pub mod gateway;
pub mod hints;
pub mod history;
pub mod image;
pub mod mcp_block;
pub mod memory;
pub mod observation;
pub mod plugin_form;
pub mod profile;
pub mod prompt;
pub mod provenance;
pub mod repetition;
pub mod routines;
pub mod skills;
pub mod strip;
pub mod text;
pub mod title;
pub mod tokens;
pub mod voice;
