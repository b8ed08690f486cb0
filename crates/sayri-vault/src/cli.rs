//! CLI placeholder
