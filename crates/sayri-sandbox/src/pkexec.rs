//! Level 4: the helper itself is started through `pkexec`, so the Polkit dialog guards the whole
//! command and the helper then applies the level-3 policy as root.

use std::ffi::OsString;
use std::path::Path;

/// Exit codes `pkexec` uses when authorization was dismissed (126) or refused / not obtainable (127).
pub const PKEXEC_DENIED_CODES: [i32; 2] = [126, 127];

/// The message for a dismissed or refused Polkit dialog.
pub const DENIED_MESSAGE: &str = "The administrator authorization (Polkit) was cancelled or \
    denied, so the command did not run. Approve the dialog to run it as root, or use a lower level.";

/// Program and arguments that run `helper helper_args… exec <spec>` as root via `pkexec`.
pub fn command(
    helper: &Path,
    helper_args: &[OsString],
    spec_json: &str,
) -> (OsString, Vec<OsString>) {
    let mut args = Vec::with_capacity(helper_args.len() + 3);
    args.push(helper.as_os_str().to_owned());
    args.extend(helper_args.iter().cloned());
    args.push("exec".into());
    args.push(spec_json.into());
    ("pkexec".into(), args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EXEC_HELPER_ARG;

    #[test]
    fn helper_runs_under_pkexec_with_its_prefix() {
        let (prog, args) = command(
            Path::new("/usr/bin/sayri"),
            &[EXEC_HELPER_ARG.into()],
            "{\"level\":\"LEVEL_4_HOST_ROOT\"}",
        );
        assert_eq!(prog, "pkexec");
        assert_eq!(
            args,
            vec![
                OsString::from("/usr/bin/sayri"),
                EXEC_HELPER_ARG.into(),
                "exec".into(),
                "{\"level\":\"LEVEL_4_HOST_ROOT\"}".into()
            ]
        );
    }
}
