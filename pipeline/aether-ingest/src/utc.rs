//! Dates in UTC from epoch milliseconds and back (the proleptic Gregorian calendar), for the
//! selection's times and the warehouse's date partitions.

/// `--fs_start_time` / `--fs_end_time`: `yyyy-MM-dd HH:mm:ss` (or `yyyy-MM-dd`, midnight), UTC.
pub fn parse_utc(text: &str) -> Result<i64, String> {
    let bad = || format!("{text:?}: expected yyyy-MM-dd HH:mm:ss (UTC) or yyyy-MM-dd");
    let t = text.trim();
    let (date, time) = match t.split_once([' ', 'T']) {
        Some((d, tm)) => (d, tm.trim_end_matches('Z')),
        None => (t, "00:00:00"),
    };
    let num = |s: &str| s.parse::<i64>().map_err(|_| bad());
    let d: Vec<&str> = date.split('-').collect();
    let tm: Vec<&str> = time.split(':').collect();
    if d.len() != 3 || tm.len() != 3 {
        return Err(bad());
    }
    let (y, mo, da) = (num(d[0])?, num(d[1])?, num(d[2])?);
    let (h, mi, s) = (num(tm[0])?, num(tm[1])?, num(tm[2])?);
    if !(1..=12).contains(&mo)
        || da < 1
        || da > days_in_month(y, mo as u32) as i64
        || !(0..24).contains(&h)
        || !(0..60).contains(&mi)
        || !(0..60).contains(&s)
    {
        return Err(bad());
    }
    Ok((days_from_civil(y, mo as u32, da as u32) * 86_400 + h * 3600 + mi * 60 + s) * 1000)
}

/// `yyyy-MM-dd HH:mm:ss` (UTC) of ms since the epoch.
pub fn format_utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The UTC day of epoch milliseconds, `YYYY-MM-DD`.
pub fn date(ms: i64) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(86_400_000));
    format!("{y:04}-{m:02}-{d:02}")
}
