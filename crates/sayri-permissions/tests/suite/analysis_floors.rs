//! What cannot be analysed (computed command words, `eval` of computed text, `source`,
//! look-alike characters, …) is at least `ask`.

use super::common::{ASK_BUT, DENY_RM, L3, check_table};
use sayri_permissions::Effect::{Allow, Ask, Deny};

#[test]
fn what_cannot_be_analysed_is_at_least_ask() {
    check_table(
        DENY_RM,
        L3,
        &[
            ("bash-ic-alias", "bash -ic 'll'", Ask),
            ("bash-i-c", "bash -i -c ls", Ask),
            ("var-command", "$CMD -rf /tmp/x", Ask),
            ("braced-var-command", "${CMD} /tmp/x", Ask),
            ("arith-command", "$((1)) /tmp/x", Ask),
            ("backtick-command", "`echo rm` /tmp/x", Ask),
            // A glob command word that no deny rule could match is not known: ask.
            ("glob-command", "/???/?s /tmp/x", Ask),
            ("eval-var", "eval $X", Ask),
            ("source", "source ./env.sh", Ask),
            ("dot", ". ~/.bashrc", Ask),
            ("python-heredoc", "python3 <<EOF\nimport os\nEOF", Ask),
            ("bash-heredoc", "bash <<'EOF'\nls\nEOF", Ask),
            ("pipe-to-sh", "echo ls | sh", Ask),
            ("heredoc-pipe-to-sh", "cat <<'EOF' | sh\nls\nEOF", Ask),
            ("rot13-to-sh", "echo yf | tr a-z n-za-m | bash", Ask),
            ("parse-error", "ls 'unterminated", Ask),
            // …but one that may name a denied program is denied (`/???/?m` can be `/bin/rm`).
            ("glob-command-denied", "/???/?m /tmp/x", Deny),
            ("bash-c-var", "bash -c \"$SCRIPT\"", Ask),
            ("keyword-as-program", "nice -n 5 { rm -rf /tmp/x; }", Ask),
            (
                "xargs-replace-script",
                "xargs -I{} sh -c '{}' < cmds.txt",
                Ask,
            ),
            (
                "xargs-i-command-word",
                "xargs -i {} --help < progs.txt",
                Ask,
            ),
        ],
    );
}

#[test]
fn unicode_look_alikes_never_weaken() {
    check_table(
        DENY_RM,
        L3,
        &[
            ("cyrillic-s-sudo", "ѕudo rm /tmp/x", Ask),
            ("fullwidth-rm", "ｒｍ -rf /tmp/x", Ask),
        ],
    );
    // `r*` allows names starting with r; a homoglyph of `rm` must not ride on it.
    check_table(
        ASK_BUT,
        L3,
        &[
            ("cyrillic-m", "rм -rf /", Ask),
            ("plain-r-program", "rsync -a a b", Allow),
        ],
    );
}
