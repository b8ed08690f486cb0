//! Allow-lists of skills, plugins and tools: `[]` means *every one*, `["none"]` means *none*,
//! any other list names exactly what is allowed. (`"none"` exists because a child agent whose
//! list shares nothing with its creator's must be able to say "nothing" — an empty list would
//! mean "everything".)

/// The entry that, alone in a list, allows nothing.
pub const NOTHING: &str = "none";

/// Whether `list` allows `name` (case-insensitive, surrounding spaces ignored).
///
/// ```
/// use sayri_core::domain::agents::allow::permits;
/// assert!(permits(&[], "bash"));
/// assert!(permits(&["Bash".to_string()], "bash"));
/// assert!(!permits(&["none".to_string()], "bash"));
/// ```
pub fn permits(list: &[String], name: &str) -> bool {
    if allows_nothing(list) {
        return false;
    }
    let entries = entries(list);
    entries.is_empty() || entries.iter().any(|e| e.eq_ignore_ascii_case(name.trim()))
}

/// The trimmed, non-empty entries of `list`, without the [`NOTHING`] marker.
fn entries(list: &[String]) -> Vec<&str> {
    list.iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty() && !s.eq_ignore_ascii_case(NOTHING))
        .collect()
}

/// Whether `list` allows nothing at all.
pub fn allows_nothing(list: &[String]) -> bool {
    entries(list).is_empty() && list.iter().any(|s| s.trim().eq_ignore_ascii_case(NOTHING))
}

/// What a child may use given its own list and its creator's (effective) one: never more than
/// the creator. An unrestricted side takes the other side's list; two restricted lists keep the
/// child's entries the creator allows, and `["none"]` when none remain.
///
/// ```
/// use sayri_core::domain::agents::allow::narrow;
/// let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
/// assert_eq!(narrow(&v(&[]), &v(&["bash"])), v(&["bash"]));
/// assert_eq!(narrow(&v(&["bash", "web"]), &v(&[])), v(&["bash", "web"]));
/// assert_eq!(narrow(&v(&["bash", "web"]), &v(&["bash"])), v(&["bash"]));
/// assert_eq!(narrow(&v(&["web"]), &v(&["bash"])), v(&["none"]));
/// ```
pub fn narrow(child: &[String], creator: &[String]) -> Vec<String> {
    if allows_nothing(creator) || allows_nothing(child) {
        return vec![NOTHING.to_string()];
    }
    let theirs = entries(creator);
    if theirs.is_empty() {
        return child.to_vec();
    }
    let mine = entries(child);
    if mine.is_empty() {
        return theirs.iter().map(|s| s.to_string()).collect();
    }
    let kept: Vec<String> = mine
        .iter()
        .filter(|m| theirs.iter().any(|t| t.eq_ignore_ascii_case(m)))
        .map(|s| s.to_string())
        .collect();
    if kept.is_empty() {
        vec![NOTHING.to_string()]
    } else {
        kept
    }
}

/// Whether every name `child` allows, `creator` allows too.
pub fn is_subset(child: &[String], creator: &[String]) -> bool {
    if allows_nothing(child) {
        return true;
    }
    let mine = entries(child);
    if mine.is_empty() {
        return entries(creator).is_empty() && !allows_nothing(creator);
    }
    mine.iter().all(|m| permits(creator, m))
}
