mod atomic_write;
mod cases;
mod cli;
mod key_files;
#[cfg(feature = "keyring")]
mod keyring;
mod redaction_evasion;
mod redaction_forms;
mod stream_redaction;
mod vault_file;
