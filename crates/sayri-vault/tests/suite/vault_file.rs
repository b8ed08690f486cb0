//! vault_file
