//! What a routine's trigger means in time: parsing `trigger` + `time_spec`, and the slots a
//! wall-clock schedule has in a time zone.
//!
//! * `daily_at HH:MM` — one slot per local calendar day. A time a spring-forward change skips
//!   runs at the same distance after the change (02:30 → 03:30 when 02:00 jumps to 03:00, the
//!   "compatible" rule of RFC 9557); a time a fall-back change repeats runs at its **first**
//!   occurrence only.
//! * `hourly N` — every N hours (fractions allowed, at least one minute) of elapsed real time;
//!   the wall clock and its changes do not matter.
//! * `cron` — 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), via
//!   `croner`: a fixed time a change skips runs at the first instant after the gap, a repeated
//!   fixed time runs once (its first occurrence); interval patterns (`*/15 …`) run on both
//!   halves of a repeated hour, as elapsed time does.
//! * `on_login` — no time slots: it runs at the first daemon start of a login session.

use chrono::{DateTime, Days, NaiveDate, NaiveTime, Offset, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use std::fmt;

/// The trigger names of the protocol (`routine_save`'s `trigger`).
pub const TRIGGER_NAMES: [&str; 4] = ["on_login", "daily_at", "hourly", "cron"];

/// The shortest interval between two runs of a routine (an `hourly` spec or a cron pattern
/// that fires more often is refused): one minute.
pub const MIN_INTERVAL_SECONDS: u64 = 60;

/// The longest `hourly` interval: a year of hours.
pub const MAX_HOURS: f64 = 24.0 * 366.0;

/// A parsed trigger.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// Runs at the first daemon start of each login session.
    OnLogin,
    /// Once a day at this local time.
    DailyAt(NaiveTime),
    /// Every this many seconds of elapsed time.
    Every(u64),
    /// A cron pattern (its text as given, trimmed); boxed, being much larger than the others.
    Cron(Box<CronSchedule>),
}

/// A parsed cron pattern and the text it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct CronSchedule {
    /// The pattern as the user wrote it (trimmed).
    pub text: String,
    cron: Cron,
}

/// Why a trigger or time spec was refused; the message says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// Not one of [`TRIGGER_NAMES`].
    #[error("unknown trigger: {0} (use on_login, daily_at, hourly or cron)")]
    UnknownTrigger(String),
    /// A `daily_at` time that is not `HH:MM`.
    #[error(
        "invalid time {0:?} for daily_at: write HH:MM in 24-hour time (00:00 to 23:59), e.g. 09:00 or 18:30"
    )]
    BadTime(String),
    /// An `hourly` interval that is not a positive number of hours.
    #[error(
        "invalid interval {0:?} for hourly: write a number of hours greater than zero, e.g. 2 or 0.5 (30 minutes)"
    )]
    BadHours(String),
    /// An `hourly` interval under a minute or over a year.
    #[error(
        "interval {0:?} for hourly is out of range: use at least 1 minute (0.0167 hours) and at most {MAX_HOURS} hours"
    )]
    HoursOutOfRange(String),
    /// A cron pattern `croner` refuses.
    #[error(
        "invalid cron pattern {pattern:?}: {reason} — write 5 fields (minute hour day-of-month month day-of-week), e.g. \"0 9 * * MON-FRI\", or 6 with seconds first"
    )]
    BadCron {
        /// The pattern.
        pattern: String,
        /// croner's reason.
        reason: String,
    },
    /// A cron pattern that never matches a real date (e.g. February 30).
    #[error("cron pattern {0:?} never fires (no date matches it)")]
    CronNeverFires(String),
    /// A cron pattern that fires more often than once a minute.
    #[error(
        "cron pattern {0:?} fires more often than once a minute; a routine runs at most once a minute"
    )]
    CronTooOften(String),
}

impl fmt::Display for Schedule {
    /// The `trigger time_spec` pair as a person reads it: `daily_at 09:00`, `hourly 2`, …
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::OnLogin => write!(f, "on_login"),
            Schedule::DailyAt(t) => write!(f, "daily_at {}", t.format("%H:%M")),
            Schedule::Every(s) => write!(f, "hourly {}", hours_text(*s)),
            Schedule::Cron(c) => write!(f, "cron {}", c.text),
        }
    }
}

/// `seconds` as a number of hours without needless digits (`7200` → `2`, `900` → `0.25`).
pub fn hours_text(seconds: u64) -> String {
    let h = seconds as f64 / 3600.0;
    let s = format!("{h:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl Schedule {
    /// Parses a trigger name and its time spec (`time_spec` is ignored for `on_login`).
    ///
    /// # Errors
    /// [`ScheduleError`] naming what is wrong and what to write instead.
    pub fn parse(trigger: &str, time_spec: &str) -> Result<Schedule, ScheduleError> {
        let spec = time_spec.trim();
        match trigger.trim() {
            "on_login" => Ok(Schedule::OnLogin),
            "daily_at" => parse_daily(spec).map(Schedule::DailyAt),
            "hourly" => parse_hours(spec).map(Schedule::Every),
            "cron" => CronSchedule::parse(spec).map(|c| Schedule::Cron(Box::new(c))),
            other => Err(ScheduleError::UnknownTrigger(other.to_string())),
        }
    }

    /// The protocol name of the trigger.
    pub fn trigger_name(&self) -> &'static str {
        match self {
            Schedule::OnLogin => "on_login",
            Schedule::DailyAt(_) => "daily_at",
            Schedule::Every(_) => "hourly",
            Schedule::Cron(_) => "cron",
        }
    }

    /// The time spec in its canonical form (`09:00`, `0.25`, the cron text, `""` for on_login).
    pub fn time_spec(&self) -> String {
        match self {
            Schedule::OnLogin => String::new(),
            Schedule::DailyAt(t) => t.format("%H:%M").to_string(),
            Schedule::Every(s) => hours_text(*s),
            Schedule::Cron(c) => c.text.clone(),
        }
    }

    /// Whether the slots are wall-clock times in a zone (`daily_at`, `cron`).
    pub fn is_wall_clock(&self) -> bool {
        matches!(self, Schedule::DailyAt(_) | Schedule::Cron(_))
    }
}

/// `H:MM` or `HH:MM`, 00:00–23:59.
fn parse_daily(spec: &str) -> Result<NaiveTime, ScheduleError> {
    let bad = || ScheduleError::BadTime(spec.to_string());
    let (h, m) = spec.split_once(':').ok_or_else(bad)?;
    let digits = |s: &str, len: std::ops::RangeInclusive<usize>| {
        len.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(h, 1..=2) || !digits(m, 2..=2) {
        return Err(bad());
    }
    let (h, m) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    NaiveTime::from_hms_opt(h, m, 0).ok_or_else(bad)
}

/// A positive number of hours → whole seconds.
fn parse_hours(spec: &str) -> Result<u64, ScheduleError> {
    let hours: f64 = spec
        .parse()
        .ok()
        .filter(|h: &f64| h.is_finite() && *h > 0.0)
        .ok_or_else(|| ScheduleError::BadHours(spec.to_string()))?;
    let seconds = (hours * 3600.0).round();
    if seconds < MIN_INTERVAL_SECONDS as f64 || hours > MAX_HOURS {
        return Err(ScheduleError::HoursOutOfRange(spec.to_string()));
    }
    Ok(seconds as u64)
}

impl CronSchedule {
    /// Parses a 5- or 6-field pattern and checks it fires, at most once a minute.
    ///
    /// # Errors
    /// [`ScheduleError::BadCron`], [`ScheduleError::CronNeverFires`] or
    /// [`ScheduleError::CronTooOften`].
    pub fn parse(text: &str) -> Result<CronSchedule, ScheduleError> {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let fields = text.split(' ').filter(|f| !f.is_empty()).count();
        if !text.starts_with('@') && !(5..=6).contains(&fields) {
            return Err(ScheduleError::BadCron {
                pattern: text,
                reason: format!("it has {fields} field(s)"),
            });
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(&text)
            .map_err(|e| ScheduleError::BadCron {
                pattern: text.clone(),
                reason: e.to_string(),
            })?;
        let sched = CronSchedule { text, cron };
        // Two consecutive fires from a fixed reference instant, in UTC: enough to know that
        // it fires at all and how often its fastest field ticks.
        let from = Utc.with_ymd_and_hms(2001, 1, 1, 0, 0, 0).single();
        let first = from.and_then(|f| sched.next_after(chrono_tz::UTC, f));
        let Some(first) = first else {
            return Err(ScheduleError::CronNeverFires(sched.text));
        };
        if let Some(second) = sched.next_after(chrono_tz::UTC, first)
            && (second - first) < TimeDelta::seconds(MIN_INTERVAL_SECONDS as i64)
        {
            return Err(ScheduleError::CronTooOften(sched.text));
        }
        Ok(sched)
    }

    /// The first fire strictly after `t`, in zone `tz`; `None` when it never fires again.
    pub fn next_after(&self, tz: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron
            .find_next_occurrence(&t.with_timezone(&tz), false)
            .ok()
            .map(|d| d.with_timezone(&Utc))
    }

    /// The last fire at or before `t`, in zone `tz`.
    pub fn latest_at_or_before(&self, tz: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron
            .find_previous_occurrence(&t.with_timezone(&tz), true)
            .ok()
            .map(|d| d.with_timezone(&Utc))
    }
}

/// The instant of local `date` `time` in `tz`: the first of two when a fall-back change repeats
/// it, and for a time a spring-forward change skips, the same distance after the change (read
/// with the offset before it).
pub fn local_instant(tz: Tz, date: NaiveDate, time: NaiveTime) -> DateTime<Utc> {
    let naive = date.and_time(time);
    match tz.from_local_datetime(&naive) {
        chrono::LocalResult::Single(d) => d.with_timezone(&Utc),
        chrono::LocalResult::Ambiguous(a, b) => a.min(b).with_timezone(&Utc),
        chrono::LocalResult::None => {
            // Changes are far more than a day and a half apart, so 36 hours before the local
            // time the offset in force is the one before the gap.
            let probe = naive - TimeDelta::hours(36);
            let before = tz.offset_from_utc_datetime(&probe).fix();
            Utc.from_utc_datetime(
                &(naive - TimeDelta::seconds(i64::from(before.local_minus_utc()))),
            )
        }
    }
}

/// The local calendar date of `t` in `tz`.
pub fn local_date(tz: Tz, t: DateTime<Utc>) -> NaiveDate {
    t.with_timezone(&tz).date_naive()
}

/// The `daily_at` slot of each local date from the day before `t`'s date on, in order.
pub(crate) fn daily_slots_from(
    tz: Tz,
    time: NaiveTime,
    t: DateTime<Utc>,
) -> impl Iterator<Item = (NaiveDate, DateTime<Utc>)> {
    let start = local_date(tz, t)
        .checked_sub_days(Days::new(1))
        .unwrap_or(NaiveDate::MIN);
    start
        .iter_days()
        .take(400)
        .map(move |d| (d, local_instant(tz, d, time)))
}

/// The last `daily_at` slot at or before `t`.
pub(crate) fn daily_latest_at_or_before(
    tz: Tz,
    time: NaiveTime,
    t: DateTime<Utc>,
) -> Option<(NaiveDate, DateTime<Utc>)> {
    let d0 = local_date(tz, t);
    (0..4)
        .filter_map(|back| {
            d0.checked_add_days(Days::new(1))?
                .checked_sub_days(Days::new(back))
        })
        .map(|d| (d, local_instant(tz, d, time)))
        .find(|(_, s)| *s <= t)
}
