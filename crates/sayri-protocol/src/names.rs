//! Every command and event name of the protocol, in one place.
//!
//! Names and meanings follow the original Sayri, so its clients keep working; commands not
//! implemented yet are listed already so that clients can rely on them. The daemon answers a
//! listed but unimplemented command with `ok:false`, `code:"not_implemented"`.

/// Command names (`{"cmd": NAME, ...}`), as the original Sayri names them.
pub mod cmd {
    macro_rules! names {
        ($($id:ident = $s:literal),* $(,)?) => {
            $(#[doc = concat!("`", $s, "`")] pub const $id: &str = $s;)*
            /// Every command name, in the order PROTOCOL.md lists them.
            pub const ALL: &[&str] = &[$($s),*];
        };
    }
    names! {
        PING = "ping", VERSION = "version", STATUS = "status", TALK = "talk", ASK = "ask",
        LISTEN = "listen", STOP_LISTENING = "stop_listening", TOGGLE_LISTENING = "toggle_listening",
        INTERRUPT = "interrupt", NEW_CONVERSATION = "new_conversation",
        SWITCH_SESSION = "switch_session", QUIT = "quit",
        PERMISSION_LIST = "permission_list", PERMISSION_ANSWER = "permission_answer",
        PERMISSION_FORGET = "permission_forget",
        CONFIG_GET = "config_get", CONFIG_SET = "config_set", CONFIG_LIST = "config_list",
        SETTINGS_SCHEMA = "settings_schema", SETTINGS_SAVE = "settings_save",
        PLUGIN_SETTINGS_SET = "plugin_settings_set", ASSET_DOWNLOAD = "asset_download",
        SKILLS_LIST = "skills_list", SKILLS_INSTALL = "skills_install",
        SKILLS_UNINSTALL = "skills_uninstall", SKILLS_SEARCH = "skills_search",
        // Skills: scanning an installed skill or a folder/archive without installing it.
        SKILLS_SCAN = "skills_scan",
        PLUGINS_LIST = "plugins_list", PLUGIN_SET_ENABLED = "plugin_set_enabled",
        UI_LIST = "ui_list", UI_START = "ui_start", UI_STOP = "ui_stop", UI_STATUS = "ui_status",
        KILLALL = "killall", CLIPBOARD_COPY = "clipboard_copy",
        GATEWAY_LIST = "gateway_list", GATEWAY_START = "gateway_start",
        GATEWAY_STOP = "gateway_stop", GATEWAY_DELETE = "gateway_delete",
        GATEWAY_SAVE = "gateway_save",
        // Gateways: pairing and peers.
        GATEWAY_PIN = "gateway_pin", GATEWAY_PEERS = "gateway_peers",
        GATEWAY_PEER_ADD = "gateway_peer_add", GATEWAY_PEER_REMOVE = "gateway_peer_remove",
        AGENTS_LIST = "agents_list", AGENT_SWITCH = "agent_switch", AGENT_SAVE = "agent_save",
        AGENT_DELETE = "agent_delete", AGENT_DETACH = "agent_detach",
        SESSIONS_LIST = "sessions_list", SESSION_GET = "session_get",
        SESSION_RENAME = "session_rename", SESSION_DELETE = "session_delete",
        ROUTINES_LIST = "routines_list", ROUTINES_RUN = "routines_run",
        ROUTINE_SAVE = "routine_save", ROUTINE_DELETE = "routine_delete",
        ROUTINE_SET_ENABLED = "routine_set_enabled",
        // Routines and triggers: Sayri's additions.
        ROUTINE_NEXT = "routine_next", TRIGGERS_LIST = "triggers_list",
        TRIGGER_SAVE = "trigger_save", TRIGGER_DELETE = "trigger_delete",
        VAULT_LIST = "vault_list", VAULT_SET = "vault_set", VAULT_DELETE = "vault_delete",
        // MCP servers (Sayri's additions).
        MCP_LIST = "mcp_list", MCP_SHOW = "mcp_show", MCP_ADD = "mcp_add",
        MCP_REMOVE = "mcp_remove", MCP_ENABLE = "mcp_enable", MCP_DISABLE = "mcp_disable",
        MCP_TEST = "mcp_test", MCP_APPROVE = "mcp_approve",
        // One command judged and run for a client (Sayri as an MCP server).
        RUN_COMMAND = "run_command",
        // Long-term memory (Sayri's additions): short facts a person keeps for the agents.
        MEMORY_ADD = "memory_add", MEMORY_LIST = "memory_list", MEMORY_GET = "memory_get",
        MEMORY_EDIT = "memory_edit", MEMORY_FORGET = "memory_forget",
        MEMORY_SEARCH = "memory_search", MEMORY_EXPORT = "memory_export",
        MEMORY_IMPORT = "memory_import", MEMORY_REVIEW = "memory_review",
        MEMORY_ACCEPT = "memory_accept", MEMORY_REJECT = "memory_reject",
        // The session database (Sayri's additions).
        DB_RECOVER = "db_recover",
        // Connection: a client narrowing what its own connection may do (the web bubble's bridge).
        CLIENT_HELLO = "client_hello",
        // Front-end helpers
        WINDOW = "window", ATTACH_IMAGE = "attach_image",
    }
}

/// Event names (`{"event": NAME, ...payload}`): the original Sayri's, plus Sayri's additions.
pub mod event {
    macro_rules! names {
        ($($id:ident = $s:literal),* $(,)?) => {
            $(#[doc = concat!("`", $s, "`")] pub const $id: &str = $s;)*
            /// Every event name.
            pub const ALL: &[&str] = &[$($s),*];
        };
    }
    names! {
        READY = "ready", STATE = "state", AUDIO_LEVEL = "audio_level", MIC = "mic",
        BUSY = "busy", PARTIAL = "partial", USER = "user", ASSISTANT_DELTA = "assistant_delta",
        REASONING_DELTA = "reasoning_delta",
        ASSISTANT_DONE = "assistant_done", TOOL_START = "tool_start", TOOL_FINISH = "tool_finish",
        HINT = "hint", ERROR = "error", SPEAKING = "speaking", SHOW = "show", HIDE = "hide",
        TOGGLE = "toggle", SETTINGS_REQUESTED = "settings_requested",
        ATTACH_IMAGE = "attach_image", CONVERSATION_STARTED = "conversation_started",
        PERMISSION_REQUEST = "permission_request", PERMISSION_RESOLVED = "permission_resolved",
        SETTINGS_CHANGED = "settings_changed", PLUGIN_SETTINGS_CHANGED = "plugin_settings_changed",
        ASSET_PROGRESS = "asset_progress", SHUTDOWN = "shutdown",
        // Routines and triggers.
        ROUTINE_STARTED = "routine_started", ROUTINE_FINISHED = "routine_finished",
        // Voice (Sayri's additions).
        WAKE = "wake", TRANSCRIPT = "transcript",
    }
}
