//! The fast-weight programmer, one step drawn with its real numbers: the
//! slow net makes a key, a value and a query from the input; the write
//! v kᵀ is added to the fast weights; the fast weights map the query to
//! the output. Data from `listings::paper::fwp::study::programmer_step`.

use crate::memory::diverging;
use crate::style::themeable;
use listings::ndarray::{Array2, ArrayView2, Axis};
use listings::paper::fwp::study::{PICTURE, programmer_step};
use plotters::coord::Shift;
use plotters::prelude::*;

const OK: &str = "drawing into a string cannot fail";

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A matrix as a grid of cells `size` px square with its top-left corner
/// at `at`, coloured on the diverging map scaled to ±`top`, outlined, with
/// `label` centred above it. Returns its (left, top, right, bottom).
fn grid(
    area: &Area,
    at: (i32, i32),
    size: i32,
    m: ArrayView2<f64>,
    top: f64,
    label: &str,
) -> (i32, i32, i32, i32) {
    let (rows, cols) = m.dim();
    for ((i, j), &x) in m.indexed_iter() {
        let (x0, y0) = (at.0 + j as i32 * size, at.1 + i as i32 * size);
        let cell = [(x0, y0), (x0 + size, y0 + size)];
        area.draw(&Rectangle::new(cell, diverging(x / top).filled()))
            .expect(OK);
    }
    let end = (at.0 + cols as i32 * size, at.1 + rows as i32 * size);
    area.draw(&Rectangle::new([at, end], BLACK.stroke_width(1)))
        .expect(OK);
    let font = ("sans-serif", 17).into_font().color(&BLACK);
    let centre = ((at.0 + end.0) / 2, at.1 - 8);
    let style = font.pos(plotters::style::text_anchor::Pos::new(
        plotters::style::text_anchor::HPos::Center,
        plotters::style::text_anchor::VPos::Bottom,
    ));
    area.draw(&Text::new(label.to_string(), centre, style))
        .expect(OK);
    (at.0, at.1, end.0, end.1)
}

/// An arrow from `from` to `to` with a filled head.
fn arrow(area: &Area, from: (i32, i32), to: (i32, i32)) {
    let style = BLACK.stroke_width(2);
    area.draw(&PathElement::new(vec![from, to], style))
        .expect(OK);
    let (dx, dy) = ((to.0 - from.0) as f64, (to.1 - from.1) as f64);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let (ux, uy) = (dx / len, dy / len);
    let back = |s: f64| {
        (
            (to.0 as f64 - 10.0 * ux + s * 5.0 * uy).round() as i32,
            (to.1 as f64 - 10.0 * uy - s * 5.0 * ux).round() as i32,
        )
    };
    area.draw(&Polygon::new(
        vec![to, back(1.0), back(-1.0)],
        BLACK.filled(),
    ))
    .expect(OK);
}

/// Words at `at`, left-aligned, in the figure's text size.
fn words(area: &Area, at: (i32, i32), text: &str) {
    let font = ("sans-serif", 16).into_font().color(&BLACK);
    area.draw(&Text::new(text.to_string(), at, font)).expect(OK);
}

/// Step t of the chapter's programmer, as a diagram of its numbers.
pub fn fast_weight_programmer() -> String {
    let (seed, t) = PICTURE;
    let s = programmer_step(seed, t).expect("the slow weights fit the input");
    let column = |v: &listings::ndarray::Array1<f64>| -> Array2<f64> {
        v.view().insert_axis(Axis(1)).to_owned()
    };
    let scale = |xs: &[&Array2<f64>]| {
        xs.iter()
            .flat_map(|m| m.iter())
            .fold(0.0_f64, |a, &x| a.max(x.abs()))
    };
    let (x, k, v, q, y) = (
        column(&s.x),
        column(&s.k),
        column(&s.v),
        column(&s.q),
        column(&s.y),
    );
    let vectors = scale(&[&k, &v, &q]);
    let weights = scale(&[&s.before, &s.write, &s.after]);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (720, 440)).into_drawing_area();
        let c = 14; // cell size
        // The input and the slow net.
        let xb = grid(&root, (20, 70), c, x.view(), scale(&[&x]), "xₜ");
        let net = [(80, 150), (210, 210)];
        root.draw(&Rectangle::new(net, BLACK.stroke_width(2)))
            .expect(OK);
        words(&root, (92, 160), "slow net");
        words(&root, (92, 184), "W_Q, W_K, W_V");
        arrow(&root, (xb.2 + 4, 180), (net[0].0 - 2, 180));
        // What it makes: a key and a value to write, a query to read.
        let kb = grid(&root, (250, 100), c, k.view(), vectors, "kₜ");
        let vb = grid(&root, (290, 100), c, v.view(), vectors, "vₜ");
        let qb = grid(&root, (640, 100), c, q.view(), vectors, "qₜ");
        arrow(&root, (net[1].0 + 2, 156), (kb.0 - 6, 156));
        let turn = (145, 52);
        root.draw(&PathElement::new(
            vec![(turn.0, net[0].1 - 2), turn, ((qb.0 + qb.2) / 2, turn.1)],
            BLACK.stroke_width(2),
        ))
        .expect(OK);
        arrow(&root, ((qb.0 + qb.2) / 2, turn.1), ((qb.0 + qb.2) / 2, 70));
        // The write, an outer product.
        let wb = grid(&root, (380, 100), c, s.write.view(), weights, "vₜ kₜᵀ");
        arrow(&root, (vb.2 + 6, 156), (wb.0 - 6, 156));
        words(&root, (vb.2 + 12, 128), "write");
        // The fast weights: before, plus the write, after.
        let bb = grid(&root, (200, 310), c, s.before.view(), weights, "Sₜ₋₁");
        let ab = grid(&root, (420, 310), c, s.after.view(), weights, "Sₜ");
        arrow(&root, (bb.2 + 6, 366), (ab.0 - 6, 366));
        words(&root, (bb.2 + 18, 340), "+ vₜ kₜᵀ");
        arrow(
            &root,
            ((wb.0 + wb.2) / 2, wb.3 + 6),
            ((ab.0 + ab.2) / 2, 276),
        );
        // The fast net, run on the query.
        let yb =
            grid(&root, (640, 310), c, y.view(), scale(&[&y]), "yₜ = Sₜ qₜ");
        arrow(&root, (ab.2 + 6, 366), (yb.0 - 8, 366));
        words(&root, (ab.2 + 14, 376), "run");
        arrow(
            &root,
            ((qb.0 + qb.2) / 2, qb.3 + 6),
            ((qb.0 + qb.2) / 2, 276),
        );
        root.present().expect(OK);
    }
    themeable(&svg)
}
