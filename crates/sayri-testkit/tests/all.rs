//! Integration tests of the scripted server, with a raw TCP client (no HTTP library between).

mod suite;
