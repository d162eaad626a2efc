//! How Java writes the numbers GET_BROKER_RUNTIME_INFO returns: `Double.toString`,
//! `MixAll.humanReadableByteCount`, `StoreStatsService.getFormatRuntime`. mqadmin parses some
//! of them back (`clusterList` reads `putTps` with `Double.parseDouble`), so the forms matter.
//!
//! May import: nothing outside `core::stats`.

/// `Double.toString`: `0.0`, `12.5`, `1.0E7`, `1.0E-4`, `NaN`, `Infinity`.
pub fn java_double(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    let a = x.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        let s = format!("{x}");
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    // Computerized scientific notation, at least one digit after the point.
    let s = format!("{x:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let mantissa = if mantissa.contains('.') { mantissa.to_owned() } else { format!("{mantissa}.0") };
    format!("{mantissa}E{exp}")
}

/// `MixAll.humanReadableByteCount(bytes, false)`: `512 B`, `1.5 KiB`, `49.0 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNIT: f64 = 1024.0;
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let exp = ((bytes as f64).ln() / UNIT.ln()) as i32;
    let exp = exp.clamp(1, 6);
    let pre = ['K', 'M', 'G', 'T', 'P', 'E'][(exp - 1) as usize];
    format!("{:.1} {pre}iB", bytes as f64 / UNIT.powi(exp))
}

/// `getFormatRuntime`: `[ 0 days, 1 hours, 2 minutes, 3 seconds ]` (Java's `MessageFormat`
/// groups thousands: `1,234 days`).
pub fn runtime(elapsed_ms: u64) -> String {
    let (second, minute, hour, day) = (1_000, 60_000, 3_600_000, 86_400_000);
    let days = elapsed_ms / day;
    let hours = (elapsed_ms % day) / hour;
    let minutes = (elapsed_ms % hour) / minute;
    let seconds = (elapsed_ms % minute) / second;
    format!("[ {} days, {hours} hours, {minutes} minutes, {seconds} seconds ]", grouped(days))
}

fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_read_as_java_writes_them() {
        assert_eq!(java_double(0.0), "0.0");
        assert_eq!(java_double(1.0), "1.0");
        assert_eq!(java_double(12.5), "12.5");
        assert_eq!(java_double(0.57), "0.57");
        assert_eq!(java_double(1.0e7), "1.0E7");
        assert_eq!(java_double(1.25e-4), "1.25E-4");
        assert_eq!(java_double(f64::NAN), "NaN");
    }

    #[test]
    fn byte_counts_read_as_java_writes_them() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(49 * 1024 * 1024 * 1024), "49.0 GiB");
    }

    #[test]
    fn runtime_reads_as_java_writes_it() {
        assert_eq!(runtime(0), "[ 0 days, 0 hours, 0 minutes, 0 seconds ]");
        let t = 2 * 86_400_000 + 3 * 3_600_000 + 4 * 60_000 + 5_000 + 999;
        assert_eq!(runtime(t), "[ 2 days, 3 hours, 4 minutes, 5 seconds ]");
        assert_eq!(runtime(1_234 * 86_400_000), "[ 1,234 days, 0 hours, 0 minutes, 0 seconds ]");
    }
}
