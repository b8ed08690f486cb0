//! `sayri --show`, `--hide`, `--toggle`, `--settings`: asks every connected front-end (orb,
//! web bubble, UI plugins) to show, hide or toggle its window, or to open its settings, through
//! the daemon's `window` command. Never starts the daemon: with no daemon there is no window.

use sayri_client::client::{CONNECT_TIMEOUT, Client, ClientError};
use sayri_client::paths::Paths;
use sayri_protocol::params::{WindowAction, WindowParams};

/// The window flags of the top-level command line (at most one).
#[derive(Debug, Default, clap::Args)]
#[group(multiple = false)]
pub(crate) struct WindowFlags {
    /// Show the assistant's window.
    #[arg(long)]
    pub show: bool,
    /// Hide the assistant's window.
    #[arg(long)]
    pub hide: bool,
    /// Show the assistant's window if hidden, hide it if shown.
    #[arg(long)]
    pub toggle: bool,
    /// Open the settings.
    #[arg(long)]
    pub settings: bool,
}

impl WindowFlags {
    /// Whether any of the flags was given.
    pub(crate) fn any(&self) -> bool {
        self.show || self.hide || self.toggle || self.settings
    }

    /// The action the flags ask for (`show` when none is given).
    pub(crate) fn action(&self) -> WindowAction {
        if self.hide {
            WindowAction::Hide
        } else if self.toggle {
            WindowAction::Toggle
        } else if self.settings {
            WindowAction::Settings
        } else {
            WindowAction::Show
        }
    }
}

/// Sends `window {action}`; says so when no front-end is connected to react.
pub(crate) async fn run(paths: &Paths, action: WindowAction) -> anyhow::Result<()> {
    let mut client = match Client::connect(&paths.socket(), CONNECT_TIMEOUT).await {
        Ok(c) => c,
        Err(ClientError::NotRunning { .. }) => anyhow::bail!(
            "the Sayri daemon is not running, so no window can be shown; start it with `sayri daemon` or open the orb"
        ),
        Err(e) => return Err(e.into()),
    };
    let result = client.request_with(&WindowParams { action }).await?;
    // The daemon counts this client among those it told.
    let others = result.clients.saturating_sub(1);
    if others == 0 {
        eprintln!("sayri: no front-end is connected to the daemon; nothing to show or hide");
    }
    Ok(())
}
