//! IANA time-zone names: a routine's own zone, and the system zone from what the machine says.

use chrono_tz::Tz;

/// Parses an IANA zone name (`Europe/Berlin`, `UTC`).
///
/// # Errors
/// A message with the name, a suggestion when only its case is wrong, and how to list zones.
pub fn parse_zone(name: &str) -> Result<Tz, String> {
    let name = name.trim();
    if let Ok(tz) = name.parse::<Tz>() {
        return Ok(tz);
    }
    let hint = chrono_tz::TZ_VARIANTS
        .iter()
        .find(|tz| tz.name().eq_ignore_ascii_case(name))
        .map(|tz| format!(" — did you mean {}?", tz.name()))
        .unwrap_or_else(|| {
            " — use an IANA name such as Europe/Berlin or America/New_York (`timedatectl list-timezones` lists them)".into()
        });
    Err(format!("unknown time zone {name:?}{hint}"))
}

/// The system zone from the machine's sources, in the order the C library reads them:
/// the `TZ` variable (`Europe/Berlin`, `:Europe/Berlin`, or a path into a zoneinfo
/// directory), else the target of the `/etc/localtime` link (`…/zoneinfo/Europe/Berlin`),
/// else the first line of `/etc/timezone`.
///
/// # Errors
/// What was found and why it names no known zone (the caller then uses UTC and says so).
pub fn system_zone_from(
    tz_var: Option<&str>,
    localtime_target: Option<&str>,
    etc_timezone: Option<&str>,
) -> Result<Tz, String> {
    if let Some(v) = tz_var.map(str::trim).filter(|v| !v.is_empty()) {
        let v = v.trim_start_matches(':');
        return zoneinfo_name(v)
            .parse::<Tz>()
            .map_err(|_| format!("TZ={v:?} names no IANA time zone"));
    }
    if let Some(target) = localtime_target {
        let name = zoneinfo_name(target);
        if let Ok(tz) = name.parse::<Tz>() {
            return Ok(tz);
        }
        if etc_timezone.is_none() {
            return Err(format!(
                "/etc/localtime points to {target:?}, which names no IANA time zone"
            ));
        }
    }
    match etc_timezone.and_then(|t| t.lines().next()).map(str::trim) {
        Some(name) if !name.is_empty() => name
            .parse::<Tz>()
            .map_err(|_| format!("/etc/timezone says {name:?}, which is no IANA time zone")),
        _ => Err("neither TZ, /etc/localtime nor /etc/timezone names a time zone".into()),
    }
}

/// `…/zoneinfo/Europe/Berlin` → `Europe/Berlin` (also `zoneinfo/posix/…`, `zoneinfo/right/…`).
fn zoneinfo_name(path: &str) -> &str {
    let Some(i) = path.rfind("zoneinfo/") else {
        return path;
    };
    let rest = &path[i + "zoneinfo/".len()..];
    rest.strip_prefix("posix/")
        .or_else(|| rest.strip_prefix("right/"))
        .unwrap_or(rest)
}
