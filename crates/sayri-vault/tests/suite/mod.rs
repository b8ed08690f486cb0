mod cases;
mod redaction_forms;
mod stream_redaction;
mod vault_file;
mod key_files;
mod atomic_write;
mod cli;
