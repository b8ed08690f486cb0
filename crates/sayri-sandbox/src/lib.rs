//! Linux isolation per sandbox level: Landlock, seccomp, namespaces, rlimits.
