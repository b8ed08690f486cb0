//! redaction_forms
