//! The fast-weight programmer, one step drawn with its real numbers: the
//! slow net makes a key, a value and a query from the input; the write
//! v kᵀ is added to the fast weights; the fast weights map the query to
//! the output. Data from `listings::paper::fwp::study::programmer_step`.

use crate::lines::figure;
use crate::memory::diverging;
use crate::style::Width;
use listings::ndarray::{Array2, ArrayView2, Axis};
use listings::paper::fwp::study::{PICTURE, programmer_step};
use plotters::coord::Shift;
use plotters::prelude::*;

const OK: &str = "drawing into a string cannot fail";

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The size of the diagram's words in SVG units: each holds a subscript,
/// drawn at 0.8 of it (see `style::themeable_at`).
fn text_size(w: Width) -> f64 {
    w.pick(16.0, 14.5)
}

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
    w: Width,
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
    let font = ("sans-serif", text_size(w) * 1.24)
        .into_font()
        .color(&BLACK);
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
fn words(area: &Area, at: (i32, i32), text: &str, w: Width) {
    let font = ("sans-serif", text_size(w) * 1.24)
        .into_font()
        .color(&BLACK);
    area.draw(&Text::new(text.to_string(), at, font)).expect(OK);
}

/// Step t of the chapter's programmer, as a diagram of its numbers: on a
/// desktop in two rows, the slow net's work above and the fast weights'
/// below; on a phone the same, narrower, with smaller cells.
pub fn fast_weight_programmer(w: Width) -> String {
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
    // Where each piece goes: the desktop layout, or the phone's.
    let l = match w {
        Width::Desktop => Layout {
            size: (720, 440),
            cell: 14,
            x: (20, 70),
            net: [(80, 150), (210, 210)],
            k: (250, 100),
            v: (290, 100),
            write: (380, 100),
            q: (640, 100),
            turn: 52,
            before: (200, 310),
            after: (420, 310),
            y: (640, 310),
            write_word: true,
        },
        Width::Phone => Layout {
            size: (380, 312),
            cell: 10,
            x: (10, 56),
            net: [(36, 86), (152, 146)],
            k: (172, 86),
            v: (192, 86),
            write: (222, 86),
            q: (318, 86),
            turn: 26,
            before: (30, 234),
            after: (174, 234),
            y: (318, 234),
            write_word: false,
        },
    };
    figure(l.size, w, |root| {
        let c = l.cell;
        // The input and the slow net.
        let xb = grid(root, l.x, c, x.view(), scale(&[&x]), "x_{t}", w);
        let net = l.net;
        let middle = (net[0].1 + net[1].1) / 2;
        root.draw(&Rectangle::new(net, BLACK.stroke_width(2)))
            .expect(OK);
        let lead = (text_size(w) * 1.5) as i32;
        words(root, (net[0].0 + 10, net[0].1 + 10), "slow net", w);
        words(
            root,
            (net[0].0 + 10, net[0].1 + 10 + lead),
            "W_{Q}, W_{K}, W_{V}",
            w,
        );
        arrow(root, (xb.2 + 4, middle), (net[0].0 - 2, middle));
        // What it makes: a key and a value to write, a query to read.
        let kb = grid(root, l.k, c, k.view(), vectors, "k_{t}", w);
        let vb = grid(root, l.v, c, v.view(), vectors, "v_{t}", w);
        let qb = grid(root, l.q, c, q.view(), vectors, "q_{t}", w);
        let row = (kb.1 + kb.3) / 2;
        arrow(root, (net[1].0 + 2, row), (kb.0 - 6, row));
        let turn = ((net[0].0 + net[1].0) / 2, l.turn);
        let q_mid = (qb.0 + qb.2) / 2;
        root.draw(&PathElement::new(
            vec![(turn.0, net[0].1 - 2), turn, (q_mid, turn.1)],
            BLACK.stroke_width(2),
        ))
        .expect(OK);
        arrow(root, (q_mid, turn.1), (q_mid, qb.1 - 2 * lead + 4));
        // The write, an outer product.
        let label = "v_{t} k_{t}^{⊤}";
        let wb = grid(root, l.write, c, s.write.view(), weights, label, w);
        arrow(root, (vb.2 + 6, row), (wb.0 - 6, row));
        if l.write_word {
            words(root, (vb.2 + 12, row - 28), "write", w);
        }
        // The fast weights: before, plus the write, after.
        let bb =
            grid(root, l.before, c, s.before.view(), weights, "S_{t−1}", w);
        let ab = grid(root, l.after, c, s.after.view(), weights, "S_{t}", w);
        let low = (ab.1 + ab.3) / 2;
        arrow(root, (bb.2 + 6, low), (ab.0 - 6, low));
        words(root, (bb.2 + 10, low + 8), "+ v_{t} k_{t}^{⊤}", w);
        let top_of = |b: (i32, i32, i32, i32)| b.1 - 2 * lead + 4;
        arrow(
            root,
            ((wb.0 + wb.2) / 2, wb.3 + 6),
            ((ab.0 + ab.2) / 2, top_of(ab)),
        );
        // The fast net, run on the query.
        let label = "y_{t} = S_{t} q_{t}";
        let yb = grid(root, l.y, c, y.view(), scale(&[&y]), label, w);
        arrow(root, (ab.2 + 6, low), (yb.0 - 8, low));
        words(root, (ab.2 + 14, low + 8), "run", w);
        arrow(root, (q_mid, qb.3 + 6), (q_mid, top_of(yb)));
    })
}

/// Where the pieces of the diagram go, in SVG units: top-left corners of
/// the grids, the slow net's box, the height of the line to the query.
struct Layout {
    size: (u32, u32),
    cell: i32,
    x: (i32, i32),
    net: [(i32, i32); 2],
    k: (i32, i32),
    v: (i32, i32),
    write: (i32, i32),
    q: (i32, i32),
    turn: i32,
    before: (i32, i32),
    after: (i32, i32),
    y: (i32, i32),
    write_word: bool,
}
