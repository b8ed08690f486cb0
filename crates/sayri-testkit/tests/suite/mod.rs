mod bin;
mod server;
