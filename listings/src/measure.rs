//! Measurement: which clock a timing reads, the time of one call, and
//! where and when a measurement was made. Timing studies and the
//! benchmark share these, so every timed number says how it was taken.

/// Which clock the study read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// CPU time of the measuring thread: the time it spent running, not
    /// the time it waited for a core that other programs were using.
    ThreadCpu,
    /// Wall-clock time, where no thread CPU clock is available.
    Wall,
}

impl Clock {
    /// The thread CPU clock if this system has one, else the wall clock.
    pub fn best() -> Clock {
        match thread_cpu_seconds() {
            Some(_) => Clock::ThreadCpu,
            None => Clock::Wall,
        }
    }

    /// How a printed table names this clock.
    pub fn describe(self) -> &'static str {
        match self {
            Clock::ThreadCpu => "CPU time of the measuring thread",
            Clock::Wall => "wall-clock time",
        }
    }
}

/// CPU time this thread has run, in seconds, from the POSIX clock
/// CLOCK_THREAD_CPUTIME_ID. None where there is no such clock.
#[cfg(unix)]
pub fn thread_cpu_seconds() -> Option<f64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let status =
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    (status == 0).then_some(now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9)
}

#[cfg(not(unix))]
pub fn thread_cpu_seconds() -> Option<f64> {
    None
}

/// Seconds `f` takes on `clock`.
pub fn time_once<R>(clock: Clock, f: impl FnOnce() -> R) -> f64 {
    match clock {
        Clock::ThreadCpu => {
            let start = thread_cpu_seconds().expect("checked by Clock::best");
            std::hint::black_box(f());
            thread_cpu_seconds().expect("checked by Clock::best") - start
        }
        Clock::Wall => {
            let start = std::time::Instant::now();
            std::hint::black_box(f());
            start.elapsed().as_secs_f64()
        }
    }
}

/// Where and when a measurement was made.
pub struct Machine {
    /// The CPU's model name, from /proc/cpuinfo where there is one.
    pub cpu: String,
    /// Cores available to the process; the study uses one.
    pub cores: usize,
    /// The date of the measurement, YYYY-MM-DD (UTC).
    pub date: String,
}

impl Machine {
    /// This machine, today.
    pub fn now() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, name)| name.trim().to_string())
            })
            .unwrap_or_else(|| format!("a {} CPU", std::env::consts::ARCH));
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Machine {
            cpu,
            cores,
            date: civil_date(seconds / 86_400),
        }
    }
}

/// The calendar date (proleptic Gregorian, UTC) of a day counted from
/// 1970-01-01, as YYYY-MM-DD.
pub fn civil_date(days_since_1970: u64) -> String {
    // Days since 0000-03-01, in 400-year eras of 146 097 days; March
    // first, so that the leap day ends the year.
    let days = days_since_1970 + 719_468;
    let era = days / 146_097;
    let day_of_era = days % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524
        - day_of_era / 146_096)
        / 365;
    let day_of_year =
        day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_date_counts_days_from_1970() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(31), "1970-02-01");
        assert_eq!(civil_date(365), "1971-01-01");
        assert_eq!(civil_date(11_016), "2000-02-29"); // a leap day
        assert_eq!(civil_date(11_017), "2000-03-01");
        assert_eq!(civil_date(19_723), "2024-01-01");
        assert_eq!(civil_date(20_513), "2026-03-01");
    }
}
