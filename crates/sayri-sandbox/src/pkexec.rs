//! Level 4: the helper itself is started through `pkexec`, so the Polkit dialog guards the whole
//! command and the helper then applies the level-3 policy as root. `pkexec` keeps the helper's
//! stdin, the socket that carries its instructions, so nothing but the mode word is in the
//! command line `pkexec` shows and logs.

use std::ffi::OsString;
use std::path::Path;

/// Exit codes `pkexec` uses when authorization was dismissed (126) or refused / not obtainable (127).
pub const PKEXEC_DENIED_CODES: [i32; 2] = [126, 127];

/// The message for a dismissed or refused Polkit dialog.
pub const DENIED_MESSAGE: &str = "The administrator authorization (Polkit) was cancelled or \
    denied, so the command did not run. Approve the dialog to run it as root, or use a lower level.";

/// Program and arguments that run `helper helper_args… exec` as root via `pkexec`.
pub fn command(helper: &Path, helper_args: &[OsString]) -> (OsString, Vec<OsString>) {
    let mut args = Vec::with_capacity(helper_args.len() + 2);
    args.push(helper.as_os_str().to_owned());
    args.extend(helper_args.iter().cloned());
    args.push(crate::exec_helper::EXEC_MODE.into());
    ("pkexec".into(), args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EXEC_HELPER_ARG;

    #[test]
    fn helper_runs_under_pkexec_with_its_prefix_and_no_spec_in_argv() {
        let (prog, args) = command(Path::new("/usr/bin/sayri"), &[EXEC_HELPER_ARG.into()]);
        assert_eq!(prog, "pkexec");
        assert_eq!(
            args,
            vec![
                OsString::from("/usr/bin/sayri"),
                EXEC_HELPER_ARG.into(),
                "exec".into(),
            ],
            "the mode word only: the spec travels on stdin"
        );
    }
}
