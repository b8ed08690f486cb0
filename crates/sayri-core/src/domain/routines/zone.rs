//! IANA time-zone names: a routine's own zone, and the system zone from what the machine says.

use chrono_tz::Tz;

/// A zone name that is no IANA zone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown time zone {name:?}{}", hint(*.suggestion))]
pub struct ZoneError {
    /// The name as given (trimmed).
    pub name: String,
    /// The IANA name it matches but for its case, if any.
    pub suggestion: Option<&'static str>,
}

fn hint(suggestion: Option<&str>) -> String {
    match suggestion {
        Some(name) => format!(" — did you mean {name}?"),
        None => " — use an IANA name such as Europe/Berlin or America/New_York (`timedatectl list-timezones` lists them)".into(),
    }
}

/// Parses an IANA zone name (`Europe/Berlin`, `UTC`).
///
/// # Errors
/// [`ZoneError`]: the name, a suggestion when only its case is wrong, and how to list zones.
pub fn parse_zone(name: &str) -> Result<Tz, ZoneError> {
    let name = name.trim();
    if let Ok(tz) = name.parse::<Tz>() {
        return Ok(tz);
    }
    let suggestion = chrono_tz::TZ_VARIANTS
        .iter()
        .find(|tz| tz.name().eq_ignore_ascii_case(name))
        .map(|tz| tz.name());
    Err(ZoneError {
        name: name.to_string(),
        suggestion,
    })
}

/// Why the machine's sources name no known zone (the caller then uses UTC and says so).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SystemZoneError {
    /// `TZ` is set to something else than a zone name.
    #[error("TZ={0:?} names no IANA time zone")]
    TzVar(String),
    /// `/etc/localtime` links to a file that is no zone.
    #[error("/etc/localtime points to {0:?}, which names no IANA time zone")]
    Localtime(String),
    /// `/etc/timezone`'s first line is no zone.
    #[error("/etc/timezone says {0:?}, which is no IANA time zone")]
    EtcTimezone(String),
    /// None of the sources is there.
    #[error("neither TZ, /etc/localtime nor /etc/timezone names a time zone")]
    NoSource,
}

/// The system zone from the machine's sources, in the order the C library reads them:
/// the `TZ` variable (`Europe/Berlin`, `:Europe/Berlin`, or a path into a zoneinfo
/// directory), else the target of the `/etc/localtime` link (`…/zoneinfo/Europe/Berlin`),
/// else the first line of `/etc/timezone`.
///
/// # Errors
/// [`SystemZoneError`]: what was found and why it names no known zone.
pub fn system_zone_from(
    tz_var: Option<&str>,
    localtime_target: Option<&str>,
    etc_timezone: Option<&str>,
) -> Result<Tz, SystemZoneError> {
    if let Some(v) = tz_var.map(str::trim).filter(|v| !v.is_empty()) {
        let v = v.trim_start_matches(':');
        return zoneinfo_name(v)
            .parse::<Tz>()
            .map_err(|_| SystemZoneError::TzVar(v.to_string()));
    }
    if let Some(target) = localtime_target {
        let name = zoneinfo_name(target);
        if let Ok(tz) = name.parse::<Tz>() {
            return Ok(tz);
        }
        if etc_timezone.is_none() {
            return Err(SystemZoneError::Localtime(target.to_string()));
        }
    }
    match etc_timezone.and_then(|t| t.lines().next()).map(str::trim) {
        Some(name) if !name.is_empty() => name
            .parse::<Tz>()
            .map_err(|_| SystemZoneError::EtcTimezone(name.to_string())),
        _ => Err(SystemZoneError::NoSource),
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
