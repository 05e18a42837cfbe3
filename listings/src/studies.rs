//! The studies the book shows more than once (a printed table and a
//! figure, or a chapter's tests and its output), each run once per process
//! here, with the chapter's parameters: one build computes each of them
//! once, and its table and figure show the same run. Everything else the
//! book prints is cheap and runs where `outputs` asks for it.

use crate::appendix::speed::study::{
    ACCURACY_CHUNK, ACCURACY_D, ACCURACY_LENGTHS, ACCURACY_SEEDS,
    AccuracyStudy, CHUNK_SIZE_D, CHUNK_SIZE_N, CHUNK_SIZE_REPS, CHUNK_SIZES,
    ChunkSizeStudy, accuracy_study, chunk_size_study,
};
use crate::m3::delete_softmax::study::{
    RANK_D, RANK_HOT_TAU_OVER_SQRT_D, RANK_LENGTHS, RANK_SEED, RankStudy,
    TAYLOR_D, TAYLOR_DEGREES, TAYLOR_POINTS, TAYLOR_SEED, TAYLOR_WIDE_D,
    TaylorStudy, rank_study, taylor_study,
};
use crate::m3::feature_map::study::{
    self as feature_map, CapacitySweep, SWEEP_COUNTS, SWEEP_D, SWEEP_GAIN,
    SWEEP_M, SWEEP_SEEDS,
};
use crate::m3::schedules::study::{TIMING, TimingStudy, timing_study};
use crate::paper::after::study::{
    EDITING_COUNTS, EDITING_D, EDITING_M, EDITING_SEEDS, EditingStudy,
    FADING_DS, FADING_SEEDS, FadingStudy, editing_study, fading_study,
};
use crate::paper::capacity_sweep::study::{self as capacity_sweep, MapCurves};
use crate::paper::feature_maps::study::{SPREAD_D, SPREAD_DRAWS, SPREAD_RS};
use crate::paper::feature_maps::{SpreadRow, favor_spread};
use std::sync::OnceLock;

/// `pub fn name() -> &'static T`, computing `init` on the first call only.
macro_rules! once {
    ($(#[$doc:meta])* $name:ident: $ty:ty = $init:expr;) => {
        $(#[$doc])*
        pub fn $name() -> &'static $ty {
            static CELL: OnceLock<$ty> = OnceLock::new();
            CELL.get_or_init(|| $init)
        }
    };
}

once! {
    /// "Delete the softmax": the rank of each kernel's matrix.
    chapter_rank_study: RankStudy = rank_study(
        &RANK_LENGTHS,
        RANK_D,
        RANK_HOT_TAU_OVER_SQRT_D,
        RANK_SEED,
    );
}

once! {
    /// "Delete the softmax": Taylor features of exp, degree by degree.
    chapter_taylor_study: TaylorStudy = taylor_study(
        TAYLOR_DEGREES,
        TAYLOR_D,
        TAYLOR_WIDE_D,
        TAYLOR_POINTS,
        TAYLOR_SEED,
    );
}

once! {
    /// "Two faces of one computation": every form timed at every length.
    measured_timing: TimingStudy = timing_study(&TIMING);
}

once! {
    /// "The feature map φ": the capacity sweep of every map.
    chapter_sweep: CapacitySweep = feature_map::capacity_sweep(
        &SWEEP_COUNTS,
        SWEEP_D,
        SWEEP_M,
        SWEEP_GAIN,
        SWEEP_SEEDS,
    );
}

once! {
    /// "Feature maps: elu+1, FAVOR+, DPFP": the spread of FAVOR+.
    chapter_favor_spread: Vec<SpreadRow> =
        favor_spread(SPREAD_D, &SPREAD_RS, SPREAD_DRAWS);
}

once! {
    /// "Capacity by feature map and update rule": every map, n and seed.
    capacity_sweep: Vec<MapCurves> = capacity_sweep::capacity_sweep();
}

once! {
    /// Appendix E: f32 drift of the recurrent and chunkwise sums.
    speed_accuracy: AccuracyStudy = accuracy_study(
        &ACCURACY_LENGTHS,
        ACCURACY_D,
        ACCURACY_CHUNK,
        ACCURACY_SEEDS,
    );
}

once! {
    /// Appendix E: the chunk size that runs fastest on this machine.
    measured_chunk_sizes: ChunkSizeStudy = chunk_size_study(
        CHUNK_SIZE_N,
        CHUNK_SIZE_D,
        &CHUNK_SIZES,
        CHUNK_SIZE_REPS,
    );
}

once! {
    /// "After the paper": the editing study.
    chapter_editing: EditingStudy = editing_study(
        &EDITING_COUNTS,
        EDITING_D,
        EDITING_M,
        EDITING_SEEDS,
    );
}

once! {
    /// "After the paper": the fading studies, one per width of
    /// `FADING_DS`.
    chapter_fading: [FadingStudy; 2] =
        FADING_DS.map(|d| fading_study(d, FADING_SEEDS));
}
