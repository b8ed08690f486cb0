mod atomic_write;
mod cli;
mod command_output_redaction;
mod common;
mod dump_redaction;
mod key_files;
#[cfg(feature = "keyring")]
mod keyring;
mod redaction_evasion;
mod redaction_forms;
mod stream_redaction;
mod url_redaction;
mod vault_file;
