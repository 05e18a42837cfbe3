//! The studies the book shows more than once (a printed table and a
//! figure, or a chapter's tests and its output), each run once per process
//! here, with the chapter's parameters: one build computes each of them
//! once, and its table and figure show the same run. Everything else the
//! book prints is cheap and runs where `outputs` asks for it.

use crate::appendix::speed::{
    AccuracyStudy, ChunkSizeStudy, accuracy_study, chunk_size_study,
};
use crate::m3::delete_softmax::{
    RankStudy, TaylorStudy, rank_study, taylor_study,
};
use crate::m3::feature_map::recall::{self, CapacitySweep, SWEEP_COUNTS};
use crate::m3::schedules::{TIMING, TimingStudy, timing_study};
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

/// Sequence lengths of the rank study of "Delete the softmax".
pub const RANK_LENGTHS: [usize; 7] = [4, 8, 16, 32, 64, 128, 256];

once! {
    /// "Delete the softmax": the rank of the softmax kernel's matrix,
    /// points in d = 4, a hot temperature of 16√d.
    chapter_rank_study: RankStudy = rank_study(&RANK_LENGTHS, 4, 16.0, 0);
}

once! {
    /// "Delete the softmax": Taylor features of exp, orders 0 to 12.
    chapter_taylor_study: TaylorStudy = taylor_study(0..=12, 4, 64, 24, 0);
}

once! {
    /// "Two faces of one computation": every form timed at every length.
    measured_timing: TimingStudy = timing_study(&TIMING);
}

once! {
    /// "The feature map φ": keys and values of width 8, queries 4 · key,
    /// ten seeds.
    chapter_sweep: CapacitySweep =
        recall::capacity_sweep(&SWEEP_COUNTS, 8, 8, 4.0, 10);
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
    speed_accuracy: AccuracyStudy =
        accuracy_study(&[256, 1024, 4096, 16384], 32, 64, 2);
}

once! {
    /// Appendix E: the chunk size that runs fastest on this machine.
    measured_chunk_sizes: ChunkSizeStudy = chunk_size_study(
        4096,
        32,
        &[2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
        3,
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
