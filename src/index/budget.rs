//! What one read may spend: a deadline, a number of entries scanned, and a flag its
//! owner sets when nobody waits for the answer any more. The service gives every request
//! one; every scan of the index ([`Col::scan_raw`](super::columns::Col)) checks the
//! budget of the thread it runs on, so a request that times out or whose client left
//! stops its work there, not when it next writes a byte (a filter that matches nothing
//! over a large range wrote none).
//!
//! A thread-local and not a parameter: the scans sit under every query (the CDX APIs,
//! TimeMaps, whereis, the report), and a budget is a property of the thread that runs
//! one request's work, as a cancellation context is. The commands run without one.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{IndexError, Result};

/// One request's budget.
#[derive(Debug, Clone)]
pub struct Budget {
    deadline: Instant,
    /// The setting that set the deadline, for the message.
    deadline_setting: &'static str,
    max_rows: u64,
    cancelled: Arc<AtomicBool>,
    /// A pause per entry scanned, for tests of what a slow scan does (0 in normal use).
    pause: Duration,
}

impl Budget {
    /// Until `deadline` (set by the setting named), at most `max_rows` entries scanned
    /// (0: no count).
    pub fn new(deadline: Instant, deadline_setting: &'static str, max_rows: u64) -> Budget {
        // Read once per process: a budget is made per request.
        static PAUSE: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
        let pause = *PAUSE.get_or_init(|| {
            std::env::var("TIDEMARK_TEST_SCAN_PAUSE_US")
                .ok()
                .and_then(|v| v.parse().ok())
                .map(Duration::from_micros)
                .unwrap_or_default()
        });
        Budget {
            deadline,
            deadline_setting,
            max_rows,
            cancelled: Arc::new(AtomicBool::new(false)),
            pause,
        }
    }

    /// No deadline and no count, for a whole-index build off the requests (the service's
    /// reports): only the tests' pause per entry applies.
    pub fn unbounded() -> Budget {
        let far = Instant::now() + Duration::from_secs(100 * 365 * 86_400);
        Budget::new(far, "none", 0)
    }

    /// A guard that cancels the work when dropped (the answer is no longer awaited),
    /// unless [`Cancel::disarm`]ed.
    pub fn canceller(&self) -> Cancel {
        Cancel(Some(self.cancelled.clone()))
    }

    /// Runs `f` with this budget checked by every scan on this thread.
    pub fn run<T>(self, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<Spending>);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|c| *c.borrow_mut() = self.0.take());
            }
        }
        let spending = Spending {
            budget: self,
            rows: 0,
        };
        let _restore = Restore(CURRENT.with(|c| c.borrow_mut().replace(spending)));
        f()
    }
}

/// Cancels a budget's work when dropped.
pub struct Cancel(Option<Arc<AtomicBool>>);

impl Cancel {
    /// The answer was delivered: dropping this no longer cancels anything.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Cancel {
    fn drop(&mut self) {
        if let Some(flag) = self.0.take() {
            flag.store(true, Ordering::Relaxed);
        }
    }
}

struct Spending {
    budget: Budget,
    rows: u64,
}

thread_local! {
    static CURRENT: RefCell<Option<Spending>> = const { RefCell::new(None) };
}

/// Entries between two looks at the clock.
const CLOCK_EVERY: u64 = 256;

/// Counts one entry scanned against the thread's budget, if it has one: an error once
/// the budget is spent, the deadline passed or the work cancelled.
pub fn spend() -> Result<()> {
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        let Some(s) = c.as_mut() else { return Ok(()) };
        s.rows += 1;
        let b = &s.budget;
        if !b.pause.is_zero() {
            std::thread::sleep(b.pause);
        }
        if b.max_rows > 0 && s.rows > b.max_rows {
            return Err(IndexError::OverBudget(format!(
                "this request reads more than {} index entries (serve.max_scan_rows): narrow it (an exact URL, a time range, a limit)",
                b.max_rows
            )));
        }
        if s.rows % CLOCK_EVERY == 0 || !b.pause.is_zero() {
            if b.cancelled.load(Ordering::Relaxed) {
                return Err(IndexError::OverBudget(
                    "the request was given up (its client left or its time ran out)".into(),
                ));
            }
            if Instant::now() >= b.deadline {
                return Err(IndexError::OverBudget(format!(
                    "this request took longer than {}: narrow it (an exact URL, a time range, a limit)",
                    b.deadline_setting
                )));
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spend_all(n: u64) -> Result<()> {
        (0..n).try_for_each(|_| spend())
    }

    #[test]
    fn without_a_budget_nothing_is_counted() {
        assert!(spend_all(10_000).is_ok());
    }

    #[test]
    fn a_budget_stops_at_its_rows_its_deadline_or_its_cancel() {
        let far = Instant::now() + Duration::from_secs(3600);
        let b = Budget::new(far, "serve.request_timeout_s", 1000);
        assert!(b.clone().run(|| spend_all(1000)).is_ok());
        let e = b.run(|| spend_all(1001)).unwrap_err();
        assert!(e.to_string().contains("serve.max_scan_rows"), "{e}");
        // The thread's budget ends with `run`.
        assert!(spend_all(5000).is_ok());

        let past = Instant::now() - Duration::from_millis(1);
        let b = Budget::new(past, "serve.request_timeout_s", 0);
        let e = b.run(|| spend_all(CLOCK_EVERY)).unwrap_err();
        assert!(e.to_string().contains("serve.request_timeout_s"), "{e}");

        let b = Budget::new(far, "serve.request_timeout_s", 0);
        drop(b.canceller());
        assert!(b.run(|| spend_all(CLOCK_EVERY)).is_err());
        let b = Budget::new(far, "serve.request_timeout_s", 0);
        b.canceller().disarm();
        assert!(b.run(|| spend_all(10 * CLOCK_EVERY)).is_ok());
    }

    #[test]
    fn a_budget_ends_with_its_run_even_on_a_panic() {
        let past = Instant::now() - Duration::from_millis(1);
        let b = Budget::new(past, "x", 0);
        let r = std::panic::catch_unwind(|| b.run(|| panic!("in the scan")));
        assert!(r.is_err());
        assert!(spend_all(10 * CLOCK_EVERY).is_ok());
    }
}
