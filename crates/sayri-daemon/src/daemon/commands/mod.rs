//! Command handlers, one file per area. [`register_all`] is the full table of this build: every
//! command with its access class, run mode and handler.
//!
//! Access classes (pinned by the `command_access` test, which holds the same table):
//! * [`Access::ReadOnly`] — looks, changes nothing.
//! * [`Access::Assistant`] — runs or steers the assistant's turns and conversations.
//! * [`Access::Management`] — changes what Sayri may do or deletes the user's data; refused to a
//!   client running inside a command of a turn.

pub mod agent;
pub mod agents;
pub mod assets;
pub mod attach;
pub mod config;
pub mod connection;
pub mod database;
pub mod desktop;
pub mod gateways;
pub mod mcp;
pub mod memory;
pub mod permissions;
pub mod plugin_services;
pub mod plugins;
pub mod routines;
pub mod runtime;
pub mod settings;
pub mod skills;
pub mod ui;
pub mod vault;
pub mod voice;

use crate::daemon::dispatch::{Access, Dispatcher, Mode};

/// Registers every implemented command.
pub fn register_all(d: &mut Dispatcher) {
    use Access::{Assistant, Management, ReadOnly};
    use Mode::{Inline, Task};
    d.register(ReadOnly, Inline, runtime::ping)
        .register(ReadOnly, Inline, runtime::version)
        .register(ReadOnly, Inline, runtime::status)
        .register(Management, Inline, runtime::quit)
        .register(ReadOnly, Inline, config::config_get)
        .register(Management, Inline, config::config_set)
        .register(ReadOnly, Inline, config::config_list)
        .register(Assistant, Task, agent::talk)
        .register(Assistant, Task, agent::ask)
        .register(Assistant, Inline, agent::interrupt)
        // A client's own command, judged by an agent's rules: refused to a command of a turn,
        // which could otherwise run under a wider agent than its own.
        .register(Management, Task, agent::run_command)
        .register(Assistant, Inline, agent::new_conversation)
        .register(Assistant, Inline, agent::switch_session)
        .register(ReadOnly, Task, agent::sessions_list)
        .register(ReadOnly, Task, agent::session_get)
        .register(Assistant, Task, agent::session_rename)
        .register(Management, Task, agent::session_delete)
        .register(ReadOnly, Task, agents::agents_list)
        .register(Management, Inline, agents::agent_switch)
        .register(Management, Task, agents::agent_save)
        .register(Management, Task, agents::agent_delete)
        .register(Management, Task, agents::agent_detach)
        .register(ReadOnly, Inline, permissions::permission_list)
        .register(Management, Inline, permissions::permission_answer)
        .register(Management, Inline, permissions::permission_forget)
        .register(ReadOnly, Task, vault::vault_list)
        .register(Management, Task, vault::vault_set)
        .register(Management, Task, vault::vault_delete)
        // The session database: rebuilding it replaces the file the daemon uses.
        .register(Management, Task, database::db_recover)
        // Voice. Opening the microphone is management: a command of a turn must not make
        // Sayri record the room; stopping it is harmless.
        .register(Management, Task, voice::listen)
        .register(Assistant, Inline, voice::stop_listening)
        .register(Management, Inline, voice::toggle_listening)
        // Connection: a client narrowing its own connection (the web bubble's bridge).
        .register(ReadOnly, Inline, connection::client_hello)
        // Routines and triggers
        .register(ReadOnly, Task, routines::routines_list)
        .register(Management, Task, routines::routines_run)
        .register(Management, Task, routines::routine_save)
        .register(Management, Task, routines::routine_delete)
        .register(Management, Task, routines::routine_set_enabled)
        .register(ReadOnly, Task, routines::routine_next)
        .register(ReadOnly, Task, routines::triggers_list)
        .register(Management, Task, routines::trigger_save)
        .register(Management, Task, routines::trigger_delete)
        // Settings forms and front-end helpers
        .register(ReadOnly, Inline, settings::settings_schema)
        .register(Management, Inline, settings::settings_save)
        .register(Management, Task, desktop::clipboard_copy)
        .register(Management, Task, desktop::killall)
        .register(Assistant, Inline, desktop::window)
        .register(Assistant, Task, attach::attach_image)
        // Skill settings and voice model downloads: both change what Sayri has or may use.
        .register(Management, Task, plugins::plugin_settings_set)
        .register(Management, Task, assets::asset_download);
    // Gateways
    d.register(ReadOnly, Task, gateways::gateway_list)
        .register(Management, Task, gateways::gateway_save)
        .register(Management, Task, gateways::gateway_start)
        .register(Management, Task, gateways::gateway_stop)
        .register(Management, Task, gateways::gateway_delete)
        .register(Management, Inline, gateways::gateway_pin)
        .register(ReadOnly, Task, gateways::gateway_peers)
        .register(Management, Task, gateways::gateway_peer_add)
        .register(Management, Task, gateways::gateway_peer_remove);
    // MCP servers: adding one or connecting to it starts third-party code (in the sandbox).
    d.register(ReadOnly, Task, mcp::mcp_list)
        .register(ReadOnly, Task, mcp::mcp_show)
        .register(Management, Task, mcp::mcp_add)
        .register(Management, Task, mcp::mcp_remove)
        .register(Management, Task, mcp::mcp_enable)
        .register(Management, Task, mcp::mcp_disable)
        .register(Management, Task, mcp::mcp_test)
        .register(Management, Task, mcp::mcp_approve);
    register_memory(d);
    // Skills
    d.register(ReadOnly, Task, skills::skills_list)
        .register(Management, Task, skills::skills_install)
        .register(Management, Task, skills::skills_uninstall)
        .register(Management, Task, skills::skills_scan)
        .register(ReadOnly, Task, skills::skills_search);
    // Plugins and UIs: starting a front-end hands the assistant to it, so it is management.
    d.register(ReadOnly, Task, plugin_services::plugins_list)
        .register(Management, Task, plugin_services::plugin_set_enabled)
        .register(ReadOnly, Inline, ui::ui_list)
        .register(ReadOnly, Inline, ui::ui_status)
        .register(Management, Task, ui::ui_start)
        .register(Management, Task, ui::ui_stop);
}

/// Registers the long-term memory commands.
fn register_memory(d: &mut Dispatcher) {
    use Access::{Management, ReadOnly};
    use Mode::Task;
    // Long-term memory: what is written there is the person's own, and will steer what agents
    // recall, so changing it is management; looking at it is not.
    d.register(Management, Task, memory::memory_add)
        .register(ReadOnly, Task, memory::memory_list)
        .register(ReadOnly, Task, memory::memory_get)
        .register(Management, Task, memory::memory_edit)
        .register(Management, Task, memory::memory_forget)
        .register(ReadOnly, Task, memory::memory_search)
        .register(ReadOnly, Task, memory::memory_export)
        .register(Management, Task, memory::memory_import)
        .register(ReadOnly, Task, memory::memory_review)
        .register(Management, Task, memory::memory_accept)
        .register(Management, Task, memory::memory_reject);
}
