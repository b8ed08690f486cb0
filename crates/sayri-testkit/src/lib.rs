//! Test support: a scripted OpenAI-compatible server.
