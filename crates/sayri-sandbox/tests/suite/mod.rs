mod common;
mod escape_l1;
mod escape_l2;
mod fail_closed;
mod host_levels;
mod launcher_death;
mod terminal_injection;
mod timeouts;
