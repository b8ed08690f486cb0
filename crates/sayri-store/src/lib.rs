//! SQLite storage for sessions, messages, approvals and preferences.
