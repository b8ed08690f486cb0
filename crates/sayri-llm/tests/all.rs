//! Integration tests of sayri-llm, one binary: real HTTP over loopback against the scripted
//! server of sayri-testkit, plus one real model.

mod suite;
