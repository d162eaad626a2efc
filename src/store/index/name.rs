//! IndexFile names: the creation time in local time as `yyyyMMddHHmmssSSS`
//! (`UtilAll.timeMillisToHumanString`). The Java broker sorts the directory by name to get the
//! files' order, so names must keep increasing. The local UTC offset comes from chrono (already
//! a dependency for `deleteWhen`); the formatting is ours so it can be tested with fixed inputs.
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).

/// The name for a file created now, strictly after `last` (the newest existing file's name).
pub fn next_name(last: Option<&str>) -> String {
    let now = chrono::Local::now();
    next_name_at(now.timestamp_millis(), i64::from(now.offset().local_minus_utc()), last)
}

/// `format_millis(now_millis, utc_offset_secs)`, bumped to `last + 1` if it would not sort after
/// `last`: after the clock moved back, the hour repeated when daylight saving time ends, or a
/// change of the machine's time zone. Java would then break the order.
pub fn next_name_at(now_millis: i64, utc_offset_secs: i64, last: Option<&str>) -> String {
    let name = format_millis(now_millis, utc_offset_secs);
    match (last.and_then(|l| l.parse::<u64>().ok()), name.parse::<u64>()) {
        (Some(last), Ok(new)) if new <= last => format!("{:017}", last + 1),
        _ => name,
    }
}

/// `yyyyMMddHHmmssSSS` of `epoch_millis` shifted by `utc_offset_secs`.
pub fn format_millis(epoch_millis: i64, utc_offset_secs: i64) -> String {
    let local = epoch_millis + utc_offset_secs * 1000;
    let (days, ms_of_day) = (local.div_euclid(86_400_000), local.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let secs = ms_of_day / 1000;
    format!("{y:04}{m:02}{d:02}{:02}{:02}{:02}{:03}", secs / 3600, secs / 60 % 60, secs % 60, ms_of_day % 1000)
}

/// Proleptic Gregorian (year, month, day) of a day count since 1970-01-01 (H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_time_millis_to_human_string() {
        assert_eq!(format_millis(0, 0), "19700101000000000");
        assert_eq!(format_millis(1_700_000_000_123, 0), "20231114221320123");
        assert_eq!(format_millis(1_700_000_000_123, 8 * 3600), "20231115061320123");
        assert_eq!(format_millis(1_700_000_000_123, -(5 * 3600 + 30 * 60)), "20231114164320123");
        assert_eq!(format_millis(951_782_400_000, 0), "20000229000000000", "leap day");
        assert_eq!(format_millis(951_782_399_999, 0), "20000228235959999");
        assert_eq!(format_millis(-1, 0), "19691231235959999");
    }

    #[test]
    fn names_keep_increasing() {
        let now = 1_700_000_000_123;
        assert_eq!(next_name_at(now, 0, None), "20231114221320123");
        assert_eq!(next_name_at(now, 0, Some("20231114221320122")), "20231114221320123");
        assert_eq!(next_name_at(now, 0, Some("20231114221320123")), "20231114221320124");
        // The last file was named at UTC+8; the zone is now UTC.
        assert_eq!(next_name_at(now, 0, Some("20231115061320999")), "20231115061321000");
        let name = next_name(Some("20231115061320999"));
        assert!(name.len() == 17 && name.as_str() > "20231115061320999", "{name}");
    }
}
