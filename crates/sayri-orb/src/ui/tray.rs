//! The tray icon (StatusNotifierItem over D-Bus): show/hide and quit. Optional at run time: with
//! no session bus or no tray host it logs one line and the orb runs without it.

/// What the tray asks the window to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayCommand {
    /// Show or hide the window.
    Toggle,
    /// Quit the orb.
    Quit,
}

#[cfg(feature = "tray")]
mod sni {
    use super::TrayCommand;
    use ksni::TrayMethods;

    struct SayriTray {
        tx: async_channel::Sender<TrayCommand>,
    }

    impl ksni::Tray for SayriTray {
        fn id(&self) -> String {
            "sayri-orb".into()
        }
        fn title(&self) -> String {
            "Sayri".into()
        }
        fn icon_name(&self) -> String {
            "sayri-orb".into()
        }
        fn activate(&mut self, _x: i32, _y: i32) {
            let _ = self.tx.try_send(TrayCommand::Toggle);
        }
        fn menu(&self) -> Vec<ksni::MenuItem<Self>> {
            vec![
                ksni::menu::StandardItem {
                    label: "Show / hide".into(),
                    activate: Box::new(|t: &mut SayriTray| {
                        let _ = t.tx.try_send(TrayCommand::Toggle);
                    }),
                    ..Default::default()
                }
                .into(),
                ksni::MenuItem::Separator,
                ksni::menu::StandardItem {
                    label: "Quit".into(),
                    icon_name: "application-exit".into(),
                    activate: Box::new(|t: &mut SayriTray| {
                        let _ = t.tx.try_send(TrayCommand::Quit);
                    }),
                    ..Default::default()
                }
                .into(),
            ]
        }
    }

    /// Starts the tray on a thread of its own; commands arrive on `tx`.
    pub fn start(tx: async_channel::Sender<TrayCommand>) {
        let spawned = std::thread::Builder::new()
            .name("sayri-orb-tray".into())
            .spawn(move || {
                futures::executor::block_on(async move {
                    match (SayriTray { tx }).spawn().await {
                        Ok(_handle) => std::future::pending::<()>().await,
                        Err(e) => {
                            tracing::info!("no tray icon (no tray host on the session bus: {e})")
                        }
                    }
                });
            });
        if let Err(e) = spawned {
            tracing::info!("no tray icon: {e}");
        }
    }
}

/// Starts the tray icon when built with the `tray` feature; commands arrive on `tx`.
pub fn start(tx: async_channel::Sender<TrayCommand>) {
    #[cfg(feature = "tray")]
    sni::start(tx);
    #[cfg(not(feature = "tray"))]
    drop(tx);
}
