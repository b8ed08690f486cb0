//! key_files
