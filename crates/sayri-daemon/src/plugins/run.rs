//! How a plugin's program runs under the supervisor: the same way for a gateway instance and a
//! background service.
//!
//! * A `.py` program runs as `python3 -u -c <bootstrap> <program> <args…>`, found on the
//!   daemon's `PATH`. The bootstrap (fixed text, below) reads the secrets descriptor
//!   (`SAYRI_SECRETS_FD`) when there is one, puts the secrets into `os.environ` — where the
//!   original's plugins read them — then runs the program as `__main__` with `sys.argv` set to
//!   `[program, args…]` and its folder first on `sys.path`. The secrets are thus never in an
//!   argument nor in the environment the kernel shows in `/proc/PID/environ`.
//! * Any other program is executable and runs directly; it finds its secrets on the descriptor
//!   `SAYRI_SECRETS_FD` names (see `sayri_protocol::child_secrets`).
//! * Its working directory is the plugin's folder; `PYTHONUNBUFFERED=1` keeps its log current.
//! * Like every supervised program it runs in a process group of its own, its output goes to
//!   `$STATE/logs/<name>.log`, it is restarted with backoff after a crash and stopped with the
//!   daemon.

use super::{Plugin, Program, Runner};
use crate::supervisor::ChildSpec;

/// The interpreter of `.py` programs, looked up in `PATH`.
pub const PYTHON: &str = "python3";

/// What runs before a `.py` program: secrets from the descriptor into `os.environ`, then the
/// program as `__main__`.
pub const BOOTSTRAP: &str = concat!(
    "import json,os,runpy,sys\n",
    "fd=os.environ.pop('SAYRI_SECRETS_FD',None)\n",
    "if fd:\n",
    "    with os.fdopen(int(fd),'rb') as f:\n",
    "        data=f.read()\n",
    "    os.environ.update(json.loads(data or b'{}'))\n",
    "    del data\n",
    "prog=sys.argv[1]\n",
    "sys.argv=sys.argv[1:]\n",
    "sys.path[0]=os.path.dirname(prog)\n",
    "runpy.run_path(prog,run_name='__main__')\n",
);

/// A supervised child `name` running `program` of `plugin` with `args`.
pub fn child_spec(name: String, plugin: &Plugin, program: &Program, args: &[String]) -> ChildSpec {
    let mut spec = match program.runner {
        Runner::Python => ChildSpec::new(name, PYTHON)
            .arg("-u")
            .arg("-c")
            .arg(BOOTSTRAP)
            .arg(program.path.to_string_lossy()),
        Runner::Direct => ChildSpec::new(name, &program.path),
    };
    for a in args {
        spec = spec.arg(a.clone());
    }
    spec.cwd = Some(plugin.dir.clone());
    spec.env("PYTHONUNBUFFERED", "1")
}
