//! Load levels: classifying one load sample, and the hysteresis machine over samples.
//!
//! Layer 3 of the load control. The shell's load probe reports a [`LoadSample`] every
//! `LOAD_SAMPLE_INTERVAL`; [`classify`] turns it into a [`SampleClass`] and
//! [`next_level`] (the whole rule table, as a pure function) turns the run of recent
//! classes into the current [`LoadLevel`]. [`LoadLevels`] is the stateful wrapper the
//! server holds, with `LOAD_FORCE_LEVEL` support. This machine has no deadline: it moves
//! only when a sample arrives.
//!
//! # Rule table
//!
//! | from | to | when (counting the sample just classified) |
//! |------|----|------|
//! | normal or busy | overloaded | the sample is `Severe`, or the last `overload_samples` samples were all `Overload` or `Severe` |
//! | normal | busy | otherwise, the sample is `Busy` or worse |
//! | busy | normal | otherwise, the last `recover_samples` samples were all `Normal` |
//! | overloaded | normal | the last `recover_samples` samples were all `Normal` |
//! | overloaded | busy | otherwise, the last `recover_samples` samples were all `Normal` or `Busy` |
//!
//! Run lengths count samples, not levels: they are not reset by a level change. So
//! after `overloaded -> busy` (some of the calm samples were busy), a run of normal
//! samples that began while still overloaded counts toward `busy -> normal`.
//! `overload_samples` and `recover_samples` below 1 act as 1.

use super::LoadLevel;

/// One load probe report, covering the interval since the previous one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadSample {
    /// Largest event-loop lag seen in the interval.
    pub lag_us_max: u64,
    /// 99th percentile of the event-loop lag in the interval.
    pub lag_us_p99: u64,
    /// Process CPU time over the interval as a share of the CPU quota, where the quota
    /// is capped at one core (the game logic runs on one core): 1.0 is saturation.
    pub cpu_share: f64,
    /// Share of the cgroup's scheduling periods in the interval that were throttled.
    pub throttled_share: f64,
}

/// Thresholds of [`classify`] and run lengths of [`next_level`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadThresholds {
    /// `LOAD_LAG_BUSY`, compared with `lag_us_p99`.
    pub lag_busy_us: u64,
    /// `LOAD_LAG_OVERLOAD`, compared with `lag_us_p99`.
    pub lag_overload_us: u64,
    /// `LOAD_LAG_SEVERE`, compared with `lag_us_max`.
    pub lag_severe_us: u64,
    /// `LOAD_CPU_BUSY`.
    pub cpu_busy_share: f64,
    /// `LOAD_CPU_OVERLOAD`.
    pub cpu_overload_share: f64,
    /// `LOAD_THROTTLE_OVERLOAD`.
    pub throttle_overload_share: f64,
    /// `LOAD_OVERLOAD_SAMPLES`: overload samples in a row that enter `overloaded`.
    pub overload_samples: u32,
    /// `LOAD_RECOVER_SAMPLES`: calm samples in a row that leave `busy`/`overloaded`.
    pub recover_samples: u32,
}

impl Default for LoadThresholds {
    /// The defaults of PROTOCOL.md section 5.
    fn default() -> Self {
        LoadThresholds {
            lag_busy_us: 100_000,
            lag_overload_us: 250_000,
            lag_severe_us: 1_000_000,
            cpu_busy_share: 0.7,
            cpu_overload_share: 0.9,
            throttle_overload_share: 0.5,
            overload_samples: 3,
            recover_samples: 10,
        }
    }
}

/// What one sample says about the load, worst last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SampleClass {
    Normal,
    Busy,
    Overload,
    Severe,
}

impl SampleClass {
    pub fn name(self) -> &'static str {
        match self {
            SampleClass::Normal => "normal",
            SampleClass::Busy => "busy",
            SampleClass::Overload => "overload",
            SampleClass::Severe => "severe",
        }
    }

    /// `Overload` or `Severe`: counts toward entering `overloaded`.
    pub fn is_overload(self) -> bool {
        self >= SampleClass::Overload
    }
}

/// Classifies one sample (the worst matching row wins):
///
/// - `Severe`: `lag_us_max >= lag_severe_us`;
/// - `Overload`: `lag_us_p99 >= lag_overload_us`, `cpu_share >= cpu_overload_share` or
///   `throttled_share >= throttle_overload_share`;
/// - `Busy`: `lag_us_p99 >= lag_busy_us` or `cpu_share >= cpu_busy_share`;
/// - otherwise `Normal`.
///
/// Why two lag figures: the original design measured lag once per interval (sleep one
/// second, see how late it woke), a single point sample of how slowly the loop reacts.
/// Our probe runs every 10-20 ms, and its p99 is the faithful counterpart: it tracks
/// sustained slowness and ignores one isolated hiccup, which must not make a server
/// `busy`. The severe rule is about a different thing: the loop was blocked for a
/// whole second, which samples arriving late cannot hide, so a single stall must count
/// and the maximum is the figure that shows it. A NaN share compares false (normal).
pub fn classify(t: &LoadThresholds, s: &LoadSample) -> SampleClass {
    if s.lag_us_max >= t.lag_severe_us {
        SampleClass::Severe
    } else if s.lag_us_p99 >= t.lag_overload_us
        || s.cpu_share >= t.cpu_overload_share
        || s.throttled_share >= t.throttle_overload_share
    {
        SampleClass::Overload
    } else if s.lag_us_p99 >= t.lag_busy_us || s.cpu_share >= t.cpu_busy_share {
        SampleClass::Busy
    } else {
        SampleClass::Normal
    }
}

/// The level and the run lengths [`next_level`] needs; `Default` is the start state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelState {
    pub level: LoadLevel,
    /// `Overload`/`Severe` samples in a row, ending with the latest.
    pub overload_run: u32,
    /// `Normal` samples in a row, ending with the latest.
    pub normal_run: u32,
    /// Samples in a row that were not `Overload`/`Severe`, ending with the latest.
    pub calm_run: u32,
}

fn run(previous: u32, counts: bool) -> u32 {
    if counts {
        previous.saturating_add(1)
    } else {
        0
    }
}

/// The rule table of the module documentation: the state after `class` is observed.
pub fn next_level(t: &LoadThresholds, state: LevelState, class: SampleClass) -> LevelState {
    let overload_run = run(state.overload_run, class.is_overload());
    let normal_run = run(state.normal_run, class == SampleClass::Normal);
    let calm_run = run(state.calm_run, !class.is_overload());
    let overload_samples = t.overload_samples.max(1);
    let recover_samples = t.recover_samples.max(1);
    let enters_overloaded = class == SampleClass::Severe || overload_run >= overload_samples;
    let level = match state.level {
        LoadLevel::Normal | LoadLevel::Busy if enters_overloaded => LoadLevel::Overloaded,
        LoadLevel::Normal if class >= SampleClass::Busy => LoadLevel::Busy,
        LoadLevel::Normal => LoadLevel::Normal,
        LoadLevel::Busy if normal_run >= recover_samples => LoadLevel::Normal,
        LoadLevel::Busy => LoadLevel::Busy,
        LoadLevel::Overloaded if normal_run >= recover_samples => LoadLevel::Normal,
        LoadLevel::Overloaded if calm_run >= recover_samples => LoadLevel::Busy,
        LoadLevel::Overloaded => LoadLevel::Overloaded,
    };
    LevelState {
        level,
        overload_run,
        normal_run,
        calm_run,
    }
}

/// A level change caused by a sample of class `class`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelChange {
    pub from: LoadLevel,
    pub to: LoadLevel,
    pub class: SampleClass,
}

/// The hysteresis machine: the current load level from the samples seen so far.
///
/// A forced level (`LOAD_FORCE_LEVEL`) pins [`level`](Self::level): samples are still
/// tracked underneath, but [`observe`](Self::observe) reports no change, and lifting
/// the force returns to the level the samples call for.
#[derive(Clone, Debug)]
pub struct LoadLevels {
    thresholds: LoadThresholds,
    state: LevelState,
    forced: Option<LoadLevel>,
}

impl LoadLevels {
    pub fn new(thresholds: LoadThresholds) -> LoadLevels {
        LoadLevels {
            thresholds,
            state: LevelState::default(),
            forced: None,
        }
    }

    /// Classifies `sample` and moves the level; returns the change, if any.
    pub fn observe(&mut self, sample: &LoadSample) -> Option<LevelChange> {
        let class = classify(&self.thresholds, sample);
        self.observe_class(class)
    }

    /// [`observe`](Self::observe) for an already classified sample.
    pub fn observe_class(&mut self, class: SampleClass) -> Option<LevelChange> {
        let from = self.state.level;
        self.state = next_level(&self.thresholds, self.state, class);
        let to = self.state.level;
        if self.forced.is_some() || from == to {
            None
        } else {
            Some(LevelChange { from, to, class })
        }
    }

    /// Pins the level (`Some`) or lets the samples decide again (`None`). Returns
    /// `(from, to)` when the effective level changes.
    pub fn force(&mut self, forced: Option<LoadLevel>) -> Option<(LoadLevel, LoadLevel)> {
        let from = self.level();
        self.forced = forced;
        let to = self.level();
        (from != to).then_some((from, to))
    }

    /// The effective level: the forced one if any, else the one the samples call for.
    pub fn level(&self) -> LoadLevel {
        self.forced.unwrap_or(self.state.level)
    }

    pub fn forced(&self) -> Option<LoadLevel> {
        self.forced
    }

    /// The level and run lengths underneath any force.
    pub fn state(&self) -> LevelState {
        self.state
    }

    pub fn thresholds(&self) -> &LoadThresholds {
        &self.thresholds
    }
}
