mod bin;
mod server;
mod telegram;
