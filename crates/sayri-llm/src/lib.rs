//! OpenAI-compatible streaming chat client.
