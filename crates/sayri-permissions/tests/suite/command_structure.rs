//! Every simple command of a line is judged: lists, pipelines, groups, substitutions,
//! nested scripts; quoting and paths do not hide the program; allow rules see the bare name
//! only for programs in the system directories.

use super::common::{ASK_BUT, DENY_RM, L3, check_table, decide_at};
use sayri_permissions::Effect::{Allow, Ask, Deny};

#[test]
fn every_command_of_a_list_or_pipeline_is_judged() {
    let rules = r#"[
      {"action":"shell","resource":"*","effect":"ask"},
      {"action":"shell","resource":"git *","effect":"allow"},
      {"action":"shell","resource":"git clean*","effect":"deny"}]"#;
    check_table(
        rules,
        L3,
        &[
            ("A1", "git clean -fd", Deny),
            ("A2", "git fetch && git pull && git clean -fd", Deny),
            ("A3", "npm run build; git clean -fd", Deny),
            ("A4", "git status || git clean -fdx", Deny),
            ("A5", "git status | git clean -n", Deny),
            ("A6", "git fetch && git status", Allow),
            ("control", r#"echo "a && git clean -fd""#, Ask),
        ],
    );
    let d = decide_at(L3, rules, "git fetch && git pull && git clean -fd");
    assert!(d.reason.contains("git clean -fd"), "{}", d.reason);
    assert!(d.reason.contains("git clean*"), "{}", d.reason);
    assert_eq!(d.rule.unwrap().resource, "git clean*");
}

#[test]
fn an_allowed_command_does_not_allow_the_rest_of_the_line() {
    let b = r#"[{"action":"shell","resource":"*","effect":"ask"},
                {"action":"shell","resource":"cd *","effect":"allow"}]"#;
    check_table(
        b,
        L3,
        &[
            ("B1", "cd /tmp/proj", Allow),
            ("B2", "cd /tmp/proj && python3 run.py", Ask),
            ("B3", "cd /tmp/proj;rm -rf ~/notes", Ask),
        ],
    );
    let c = r#"[{"action":"shell","resource":"*","effect":"allow"}]"#;
    check_table(
        c,
        L3,
        &[
            ("C1", "echo ok && shutdown -h now", Deny),
            ("C2", "ls; mkfs.ext4 /dev/sdz1", Deny),
            ("control", r#"echo "a && git clean -fd""#, Allow),
        ],
    );
}

#[test]
fn commands_nested_in_groups_substitutions_and_scripts_are_judged() {
    let rules = r#"[{"action":"shell","resource":"*","effect":"allow"},
                    {"action":"shell","resource":"rm *","effect":"deny"}]"#;
    check_table(
        rules,
        L3,
        &[
            ("1", "{ rm -rf /tmp/sayri-x; }", Deny),
            ("2", "(rm -rf /tmp/sayri-x)", Deny),
            ("3", "echo $(rm -rf /tmp/sayri-x)", Deny),
            ("4", "echo `rm -rf /tmp/sayri-x` ", Deny),
            ("5", "cat <(rm -rf /tmp/sayri-x)", Deny),
            ("6", "tee >(rm -rf /tmp/sayri-x) < /dev/null", Deny),
            ("7", "bash -c 'rm -rf /tmp/sayri-x'", Deny),
            ("8", r#"sh -c "cd /tmp && rm -rf sayri-x""#, Deny),
            ("9", r#"eval "rm -rf /tmp/sayri-x""#, Deny),
            ("10", "if true; then rm -rf /tmp/sayri-x; fi", Deny),
            ("11", r#"for d in /tmp/sayri-x; do rm -rf "$d"; done"#, Deny),
            ("12", "f(){ rm -rf /tmp/sayri-x; }; f", Deny),
            (
                "13",
                r#"eval "$(echo cm0gLXJmIC90bXAvc2F5cmkteA== | base64 -d)""#,
                Ask,
            ),
            ("14", r#""${X:-rm}" -rf /tmp/sayri-x"#, Ask),
            ("15", "$(printf rm) -rf /tmp/sayri-x", Ask),
            ("16", r#"echo "rm -rf /tmp/sayri-x""#, Allow),
            ("17", "grep -r 'rm -rf' .", Allow),
        ],
    );
    let writes = r#"[{"action":"shell","resource":"*","effect":"allow"},
                     {"action":"write","resource":"/home/u/notes/*","effect":"deny"}]"#;
    check_table(
        writes,
        L3,
        &[
            ("18", "printf x > /home/u/notes/a.txt", Deny),
            ("19", "{ echo x; } >> /home/u/notes/a.txt", Deny),
            ("20", "echo x | tee -a /home/u/notes/a.txt", Deny),
            ("21", "echo x > /tmp/ok.txt", Allow),
        ],
    );
}

#[test]
fn separators_and_constructs_reach_the_denied_command() {
    check_table(
        DENY_RM,
        L3,
        &[
            ("newline", "true\nrm -rf /tmp/x", Deny),
            ("background", "sleep 1 & rm -rf /tmp/x", Deny),
            ("pipe-stderr", "false |& rm -rf /tmp/x", Deny),
            ("negation", "! rm -rf /tmp/x", Deny),
            ("case", "case a in a) rm -rf /tmp/x;; esac", Deny),
            ("while", "while true; do rm -rf /tmp/x; done", Deny),
            ("until", "until false; do rm /tmp/x; done", Deny),
            ("c-for", "for ((i=0;i<1;i++)); do rm /tmp/x; done", Deny),
            ("test-subst", "[[ -n $(rm /tmp/x) ]]", Deny),
            ("param-default-subst", "echo ${X:-$(rm /tmp/x)}", Deny),
            ("arith-subst", "echo $((1+$(rm /tmp/x)))", Deny),
            ("assign-subst", "x=$(rm -rf /tmp/x)", Deny),
            ("export-subst", "export X=$(rm -rf /tmp/x)", Deny),
            ("heredoc-subst", "cat <<EOF\n$(rm /tmp/x)\nEOF", Deny),
            ("dq-subst", "echo \"$(rm /tmp/x)\"", Deny),
            ("nested-c", "bash -c \"bash -c 'rm /tmp/x'\"", Deny),
            ("eval-in-sh", "sh -c 'eval \"rm /tmp/x\"'", Deny),
            ("herestring-to-bash", "bash <<< 'rm -rf /tmp/x'", Deny),
            ("time-subshell", "time (rm /tmp/x)", Deny),
            ("out-procsub", "echo x > >(rm /tmp/y)", Deny),
            ("two-procsubs", "diff <(ls) <(rm /tmp/y)", Deny),
            ("function-keyword", "function g { rm /tmp/x; }", Deny),
            ("redirected-group", "{ rm /tmp/x; } 2>/dev/null", Deny),
            ("heredoc-and", "cat <<EOF && rm /tmp/x\nhi\nEOF", Deny),
            ("heredoc-pipe", "cat <<EOF | xargs rm\n/tmp/x\nEOF", Deny),
        ],
    );
}

#[test]
fn quoting_and_paths_do_not_hide_the_program() {
    check_table(
        DENY_RM,
        L3,
        &[
            ("backslash-inside", r"r\m -rf /tmp/x", Deny),
            ("backslash-lead", r"\rm -rf /tmp/x", Deny),
            ("split-quotes", "'r'm -rf /tmp/x", Deny),
            ("double-quoted", "\"rm\" -rf /tmp/x", Deny),
            ("ansi-c-hex", r"$'\x72m' -rf /tmp/x", Deny),
            ("ansi-c-octal", r"$'\162m' -rf /tmp/x", Deny),
            ("abs-path", "/usr/bin/rm -rf /tmp/x", Deny),
            ("bin-path", "/bin/rm /tmp/x", Deny),
            ("relative-path", "./rm /tmp/x", Deny),
            ("tabs", "rm\t-rf\t/tmp/x", Deny),
            ("quoted-arg-only", "echo 'rm -rf /tmp/x'", Allow),
            ("git-rm", "git rm --cached x", Allow),
            ("grep-rm", "ls -la | grep rm", Allow),
            ("printf-rm", "printf '%s\\n' 'rm -rf /'", Allow),
            (
                "literal-heredoc-to-cat",
                "cat <<'EOF'\nrm -rf /\nEOF",
                Allow,
            ),
            ("command-v", "command -v rm", Allow),
            ("line-continuation", "r\\\nm -rf /tmp/x", Deny),
            ("git-c-harmless", "git -c color.ui=false status", Allow),
            ("trap-print", "trap -p", Allow),
        ],
    );
}

#[test]
fn command_paths_and_rules() {
    check_table(
        ASK_BUT,
        L3,
        &[
            ("system-path-allowed", "/usr/bin/ls -la", Allow),
            ("local-path-not-allowed", "./ls -la", Ask),
            ("tmp-path-not-allowed", "/tmp/evil/ls", Ask),
            ("whitespace-normalised", "ls    -la", Allow),
            ("allowed-chain", "git status && ls && echo done", Allow),
            ("one-unknown", "git status && make", Ask),
        ],
    );
    let abs = r#"[{"action":"shell","resource":"*","effect":"ask"},
                  {"action":"shell","resource":"/usr/bin/python3 *","effect":"allow"}]"#;
    check_table(
        abs,
        L3,
        &[
            ("named-path", "/usr/bin/python3 x.py", Allow),
            ("bare-name", "python3 x.py", Ask),
        ],
    );
}
