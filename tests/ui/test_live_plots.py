"""The training plots as a user meets them: axis switches, overlays, single points, smoothing."""

import math
import warnings

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPointF
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QApplication

from mlm_studio.core.metric_schema import metrics_of
from mlm_studio.core.runs.records import RECORDS, EvalRecord, ProbeResult
from mlm_studio.ui.widgets.curve_data import NAMED_PLOTS, Series, thinned
from mlm_studio.ui.widgets.live_plots import PLOT_HEIGHT, LivePlots
from mlm_studio.ui.widgets.plots import CompactAxis


def records(steps=300, eval_every=50, scale=1.0):
    out = []
    rng = np.random.default_rng(0)
    for step in range(1, steps + 1):
        point = {"step": step, "tokens_seen": step * 4096, "elapsed": step * 0.05}
        loss = scale * (8 * math.exp(-step / 80) + 2 + 0.3 * rng.standard_normal())
        out.append(
            {
                "type": "step",
                **point,
                "loss": loss,
                "accuracy": 0.1,
                "learning_rate": 1e-3,
                "grad_norm": 1.0,
                "tokens_per_second": 1e4,
            }
        )
        if step % eval_every == 0:
            out.append({"type": "eval", **point, "loss": loss, "accuracy": 0.2})
            out.append({"type": "probe", **point, "results": [{"expected": "copy", "rank": 3, "probability": 0.1}]})
    return out


@pytest.fixture
def plots(qtbot):
    widget = LivePlots()
    qtbot.addWidget(widget)
    widget.resize(1100, 600)
    widget.show()
    return widget


def shown_points(plots):
    """How many points each curve actually displays, after pyqtgraph's own clipping and thinning."""
    return {
        key: len(curve.getData()[0] if curve.getData()[0] is not None else []) for key, curve in plots.curves.items()
    }


def inside_view(plots, key):
    x, _y = plots.curves[key].getData()
    (x0, x1), _ = plots.plots[plots._plot_of[key]].viewRange()
    return x0 <= x.min() and x.max() <= x1


def test_switching_the_x_axis_back_and_forth_keeps_every_curve_drawn(qtbot, plots, tmp_path):
    plots.load(records())
    for axis in ("tokens", "step", "time", "step"):
        plots.set_axis(axis)
        plots.redraw(everything=True)
        qtbot.wait(1)  # let the views apply their new ranges
        assert all(count > 0 for count in shown_points(plots).values()), axis
        assert all(inside_view(plots, key) for key in plots.curves), axis
    assert plots.grab().save(str(tmp_path / "after-axis-switches.png"))


def test_overlaying_a_run_twice_draws_it_once_in_its_own_colour_with_train_and_validation_apart(plots):
    plots.load(records())
    earlier = records(scale=1.2)
    plots.overlay("earlier", earlier)
    plots.overlay("earlier", earlier)
    plots.redraw(everything=True)
    train, validation = plots.series["overlay:earlier:step:loss"], plots.series["overlay:earlier:eval:loss"]
    assert train.size == 300 and validation.size == 6  # not appended again
    assert np.all(np.diff(train.x("step")) > 0)  # no line drawn back to step 0
    assert plots.overlays == ["earlier"]
    train_pen = plots.curves["overlay:earlier:step:loss"].opts["pen"]
    validation_pen = plots.curves["overlay:earlier:eval:loss"].opts["pen"]
    assert train_pen.color() == validation_pen.color() != plots.curves["step_loss"].opts["pen"].color()
    assert train_pen.style() != validation_pen.style()
    assert all(count > 0 for count in shown_points(plots).values())


def test_beside_an_overlaid_run_the_shown_run_s_legend_entries_carry_its_name(plots):
    plots.load(records())
    plots.own_name = "shown-run"
    assert plots.legends["loss"].names == ["training", "validation"]  # alone: no name needed
    plots.overlay("earlier", records(scale=1.2))
    assert plots.legends["loss"].names == [
        "shown-run (train)",
        "shown-run (val)",
        "earlier (train)",
        "earlier (val)",
    ]
    # in a plot of one series, the shown run's curve is named too, first, and each run by its name alone
    assert plots.legends["learning_rate"].names == ["shown-run", "earlier"]
    assert plots.legends["grad_norm"].names == ["shown-run", "earlier"]


def test_a_curve_the_shown_run_begins_beside_an_overlaid_run_carries_its_name(qtbot, plots):
    """Training beside an overlay: the run's first evaluation arrives after the overlay was drawn."""
    plots.own_name = "training-run"
    steps = [r for r in records(steps=60, eval_every=50) if r["type"] == "step"]
    for record in steps[:40]:
        plots.add("step", record)
    plots.overlay("earlier", records(scale=1.2))
    plots.add("eval", {"step": 40, "loss": 3.0, "accuracy": 0.2})
    assert plots.legends["loss"].names == [
        "training-run (train)",
        "training-run (val)",
        "earlier (train)",
        "earlier (val)",
    ]
    plots.resize(1075, 343)  # the plots' room in a 1280 x 720 window
    qtbot.wait_until(lambda: plots.view.minimumHeight() > 2 * PLOT_HEIGHT)  # the loss legend's second line
    QApplication.processEvents()  # the scroll area laid out again
    assert not plots.scroll.verticalScrollBar().isVisible()
    for name in SIX:  # both rows whole, their x axes in sight
        axis = plots.view.mapFromScene(plots.plots[name].getAxis("bottom").sceneBoundingRect()).boundingRect()
        assert axis.bottom() <= plots.scroll.viewport().height(), name


def test_an_overlay_never_wears_a_colour_of_the_shown_runs_curves(plots):
    """Its probes included: in the probe-rank plot the overlaid run's lines stay told apart from the shown run's."""
    plots.load(records())
    for name in ("first", "second", "third", "fourth", "fifth"):
        plots.overlay(name, records(scale=1.1))
    own = {c.opts["pen"].color().name() for k, c in plots.curves.items() if not k.startswith("overlay:")}
    overlaid = {c.opts["pen"].color().name() for k, c in plots.curves.items() if k.startswith("overlay:")}
    assert len(overlaid) == 4 and not own & overlaid


def test_a_series_with_a_single_point_shows_it(plots):
    plots.load(records(steps=50, eval_every=50))
    plots.redraw(everything=True)
    for key in ("eval_loss", "eval_accuracy", "probe0"):
        assert len(plots.curves[key].getData()[0]) == 1
        assert plots.curves[key].opts["symbol"] is not None


def test_probe_ranks_plot_at_their_tokens_and_time():
    widget_records = records(steps=100, eval_every=50)
    plots = LivePlots()
    plots.load(widget_records)
    assert list(plots.series["probe0"].x("tokens")) == [50 * 4096, 100 * 4096]
    assert list(plots.series["probe0"].x("time")) == pytest.approx([2.5, 5.0])
    plots.deleteLater()


def _series(values) -> Series:
    series = Series()
    for i, value in enumerate(values):
        series.append(i, i, i, value)
    return series


def test_smoothing_is_tensorboards_debiased_moving_average():
    values = np.array([10.0, 0.0, 5.0, 7.0, 1.0])
    out = _series(values).smoothed(0.6).copy()
    assert out[0] == values[0]  # debiased: not pulled towards zero
    expected, average = [], 0.0
    for i, v in enumerate(values):
        average = 0.6 * average + 0.4 * v
        expected.append(average / (1 - 0.6 ** (i + 1)))
    assert out == pytest.approx(expected)
    assert _series(np.full(7, 3.0)).smoothed(0.99) == pytest.approx(np.full(7, 3.0))  # flat stays flat, any weight
    assert _series(values[:3]).smoothed(0.6) == pytest.approx(out[:3])  # past values never change as points arrive
    assert list(_series(values).smoothed(0.0)) == list(values)


def test_smoothing_grows_with_the_series_and_follows_a_new_weight():
    values = np.random.default_rng(0).random(600)  # past the buffer's first growth
    series = _series(values[:250])
    series.smoothed(0.6)
    for i, value in enumerate(values[250:], start=250):
        series.append(i, i, i, value)
        if i % 97 == 0:
            series.smoothed(0.6)  # extended a few points at a time, as redraws do
    assert series.smoothed(0.6) == pytest.approx(_series(values).smoothed(0.6))
    assert series.smoothed(0.9) == pytest.approx(_series(values).smoothed(0.9))  # a new weight: computed afresh
    assert series.smoothed(0.6)[-1] == pytest.approx(_series(values).smoothed(0.6)[-1])


def test_every_noisy_series_is_smoothed_over_its_faint_raw_values(plots):
    plots.load(records())
    plots.set_smoothing(0.9)
    plots.redraw(everything=True)
    for key in ("step_loss", "step_accuracy", "step_grad_norm", "step_tokens_per_second"):
        raw = plots.shadows[key].getData()[1]
        shown = plots.curves[key].getData()[1]
        assert len(raw) == len(shown) == 300
        assert shown == pytest.approx(_series(raw).smoothed(0.9))
    loss_raw, loss_shown = plots.shadows["step_loss"].getData()[1], plots.curves["step_loss"].getData()[1]
    assert np.std(np.diff(loss_shown)) < 0.5 * np.std(np.diff(loss_raw))


def test_thinning_keeps_the_extremes_in_order():
    x = np.arange(100_000, dtype=float)
    y = np.sin(x / 1000)
    y[12_345] = 50.0
    tx, ty = thinned(x, y, limit=1000)
    assert len(tx) <= 1100 and np.all(np.diff(tx) > 0) and ty.max() == 50.0 and tx[-1] == x[-1]


def test_hovering_a_plot_reads_out_its_curves_at_the_nearest_point(qtbot, plots):
    data = records()
    plots.load(data)
    plots.set_smoothing(0.0)
    qtbot.wait_until(lambda: plots.plots["loss"].vb.viewRange()[0][1] > 100)
    at_120 = next(r for r in data if r["type"] == "step" and r["step"] == 120)
    eval_at_100 = next(r for r in data if r["type"] == "eval" and r["step"] == 100)
    position = plots.plots["loss"].vb.mapViewToScene(QPointF(120.2, 5.0))
    with qtbot.waitSignal(plots.hovered) as said:
        plots.view.scene().sigMouseMoved.emit(position)
    assert said.args[0] == (
        f"loss: training {at_120['loss']:.4g} nats at step 120 · validation {eval_at_100['loss']:.4g} nats at step 100"
    )
    with qtbot.waitSignal(plots.hovered) as said:
        plots.view.scene().sigMouseMoved.emit(QPointF(-50, -50))
    assert said.args[0] == ""


def test_zoom_resets_the_context_menu_is_on_and_long_names_do_not_widen_legends(qtbot, plots):
    plots.load(records())
    plots.overlay("a-run-with-a-very-long-descriptive-name-2026", records(steps=100))
    assert all(plot.vb.menuEnabled() for plot in plots.plots.values())
    names = plots.legends["loss"].names
    assert names == ["training", "validation", "a-run-with-a…ive-name-2026 (train)", "a-run-with-a…ive-name-2026 (val)"]
    plots.plots["loss"].vb.setRange(xRange=(10, 20), yRange=(0, 1))
    plots.reset_zoom()
    qtbot.wait_until(lambda: plots.plots["loss"].vb.viewRange()[0][1] >= 300)


@pytest.mark.parametrize(
    ("values", "spacing", "expected"),
    [
        ([0, 400_000, 800_000, 1_200_000], 400_000, ["0", "0.4M", "0.8M", "1.2M"]),
        ([0, 200, 400, 600, 800], 200, ["0", "200", "400", "600", "800"]),
        ([0, 200_000, 400_000], 200_000, ["0", "200k", "400k"]),
        ([0, 500, 1000, 1500], 500, ["0", "0.5k", "1.0k", "1.5k"]),
        ([0, 5e-4, 1e-3, 1.5e-3], 5e-4, ["0", "5e-4", "1.0e-3", "1.5e-3"]),
        ([0.05, 0.1], 0.05, ["0.05", "0.10"]),
    ],
)
def test_tick_labels_stay_short(qtbot, values, spacing, expected):
    assert CompactAxis("bottom").tickStrings(values, 1.0, spacing) == expected


def test_the_plots_take_the_columns_their_width_holds_and_scroll_rather_than_shrink(qtbot, plots):
    plots.load(schema_records())  # seven plots, ELECTRA's detection among them
    assert plots.columns == 3
    for width, columns in ((700, 2), (320, 1), (1000, 3)):
        plots.resize(width, 420)  # lower than the grid: about 1060 x 770 leaves the plots this much
        qtbot.wait_until(lambda c=columns: plots.columns == c)
        rows = -(-7 // columns)
        assert plots.view.ci.getItem(5 // columns, 5 % columns) is plots.cells["probes"]
        qtbot.wait_until(lambda r=rows: plots.view.height() >= r * PLOT_HEIGHT)
        assert plots.scroll.verticalScrollBar().maximum() > 0
        # a row whose legends wrap onto more lines grows by them (on the next redraw): each data area keeps 96 px
        qtbot.wait_until(lambda: all(plot.vb.height() >= 96 for plot in plots.plots.values()))
        for name, plot in plots.plots.items():
            axis = plot.getAxis("left")
            assert axis.label.boundingRect().width() <= axis.height(), (width, name)  # its title fits beside it


def test_hidden_plots_draw_nothing_until_shown(plots):
    plots.load(records(steps=20))
    plots.hide()
    plots.add(
        "step",
        {
            "step": 21,
            "tokens_seen": 21 * 4096,
            "elapsed": 2.1,
            "loss": 1.0,
            "accuracy": 0.5,
            "learning_rate": 1e-3,
            "grad_norm": 1.0,
            "tokens_per_second": 1e4,
        },
    )
    for _ in range(10):
        plots.redraw()  # the timer's ticks
    assert len(plots.shadows["step_loss"].getData()[0]) == 20
    plots.show()
    assert len(plots.shadows["step_loss"].getData()[0]) == 21
    assert not plots._dirty


def test_records_faster_than_the_redraws_starve_no_plot(plots):
    plots.load(records(steps=10))
    drawn = {name: 0 for name in ("loss", "accuracy", "learning_rate", "grad_norm", "throughput")}
    for step in range(11, 41):  # a record per tick: five plots change each time, one is drawn
        plots.add(
            "step",
            {
                "step": step,
                "tokens_seen": step * 4096,
                "elapsed": step * 0.05,
                "loss": 1.0,
                "accuracy": 0.5,
                "learning_rate": 1e-3,
                "grad_norm": 1.0,
                "tokens_per_second": 1e4,
            },
        )
        waiting = list(plots._dirty)
        plots.redraw()
        drawn[waiting[0]] += 1
    assert all(count == 6 for count in drawn.values()), drawn
    assert (
        len(plots.curves["step_tokens_per_second"].getData()[0]) >= 35
    )  # the last in line is drawn too, not only the first


def schema_records(steps=20):
    """A record of each kind that has plotted fields (steps, evaluations, fine-tuning's validations), with a value
    in every field, ELECTRA's included."""
    plotted = [(kind, cls) for kind, cls in RECORDS.items() if any(m.plot for m in metrics_of(cls).values())]
    out = []
    for step in range(1, steps + 1):
        for kind, cls in plotted:
            values = {name: 0.5 + step / 100 for name in metrics_of(cls)}
            out.append({"type": kind, **values, "step": step})
    return out


def test_every_series_the_schema_plots_is_drawn_and_every_plot_is_the_schemas(plots):
    plotted = {f"{kind}_{name}": m for kind, cls in RECORDS.items() for name, m in metrics_of(cls).items() if m.plot}
    named = {m.plot for m in plotted.values()} | {metrics_of(ProbeResult)["rank"].plot}
    assert named == set(LivePlots.PLOTS)
    assert len(plotted) == 17 and plots._shown == 6  # the detection plot waits for its values
    plots.load(schema_records())
    assert set(plots.series) == set(plotted) and plots._shown == 7
    for key, metric in plotted.items():
        assert plots._plot_of[key] == metric.plot and plots._labels[key] == metric.series
        assert len(plots.curves[key].getData()[0]) == 20, key
        assert (key in plots.shadows) == metric.smooth
    for name in plots.plots:
        keys = [key for key in plotted if plots._plot_of[key] == name]
        colours = {plots.curves[key].opts["pen"].color().name() for key in keys}
        assert len(colours) == len(keys), name  # the series of a plot told apart
        assert plots.legends[name].names == ([plotted[key].series for key in keys] if len(keys) > 1 else [])


def test_an_undefined_value_reads_as_a_dash(qtbot):
    plots = LivePlots()
    qtbot.addWidget(plots)
    nan = float("nan")
    record = EvalRecord(step=4, tokens_seen=64, elapsed=1.0, loss=2.0, accuracy=0.5, top5_accuracy=0.7,
                        perplexity=7.4, detection_loss=0.3, detection_accuracy=0.9, detection_precision=nan,
                        detection_recall=0.0, detection_auc=0.5)  # fmt: skip
    plots.add("eval", record.to_dict())
    plots.redraw(everything=True)
    reading = plots.readout("detection", 4.0)
    assert "precision (val) —" in reading and "nan" not in reading


def electra_records(steps=300, eval_every=50):
    """A run whose curves rise to their ends (accuracy, detection) with its first precision undefined."""
    out = records(steps, eval_every)
    for record in out:
        share = min(0.95, 0.1 + record["step"] / steps)
        if record["type"] == "step":
            record.update(accuracy=share, detection_loss=1 - share, detection_accuracy=share)
        if record["type"] == "eval":
            precision = math.nan if record["step"] == eval_every else share
            record.update(accuracy=share, detection_accuracy=share, detection_precision=precision,
                          detection_recall=share, detection_auc=share)  # fmt: skip
    return out


def legend_rects(plots, name):
    legend = plots.legends[name]
    return [legend.mapRectToScene(rect) for rect in legend.entry_rects()]


@pytest.mark.parametrize("size", [(1000, 560), (700, 420)])
def test_every_legend_entry_is_shown_whole_and_none_covers_the_data(qtbot, plots, size, tmp_path):
    plots.resize(*size)
    plots.load(electra_records())
    plots.overlay("2026-11-30-modern-bert-small", records(scale=1.2))
    plots.overlay("2026-11-30-modern-bert-large", records(scale=0.9))
    # each overlaid run in every plot it has values for: training and validation where both, probes by their word
    expected = {"loss": 6, "accuracy": 6, "detection": 6, "probes": 3, "learning_rate": 2, "throughput": 2}

    def laid_out():  # a legend that wrapped onto another row has pushed its plot down
        return all(legend_rects(plots, name)[-1].bottom() <= plots.plots[name].vb.sceneBoundingRect().top() + 1
                   for name in expected)  # fmt: skip

    qtbot.wait_until(laid_out)
    for name, count in expected.items():
        cell = plots.cells[name].sceneBoundingRect()
        data = plots.plots[name].vb.sceneBoundingRect()
        rects = legend_rects(plots, name)
        assert len(rects) == count, name
        for rect in rects:
            assert not rect.intersects(data), name  # never over a curve
            assert cell.left() <= rect.left() and rect.right() <= cell.right() + 1, name  # never cut off
    assert plots.legends["loss"].names[2:] == ["…small (train)", "…small (val)", "…large (train)", "…large (val)"]
    # the image: the newest tenth of every rising curve is painted in a curve's colour, no legend text over it
    image = plots.view.grab().toImage()
    for key in ("step_accuracy", "eval_detection_auc", "step_detection_accuracy"):
        plot = plots.plots[plots._plot_of[key]]
        colours = [
            curve.opts["pen"].color()
            for k, curve in plots.curves.items()
            if plots._plot_of[k] == plot_name(plots, plot)
        ]
        x, y = plots.curves[key].getData()
        for px, py in zip(x[-len(x) // 10 :], y[-len(y) // 10 :]):
            point = plots.view.mapFromScene(plot.vb.mapViewToScene(QPointF(px, py)))
            assert any(
                _close(image.pixelColor(point.x() + dx, point.y() + dy), colour)
                for dx in (-1, 0, 1)
                for dy in (-1, 0, 1)
                for colour in colours
            ), (key, px)


def plot_name(plots, plot):
    return next(name for name, p in plots.plots.items() if p is plot)


def _close(a, b):
    return abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue()) < 60


def probe_ranks(plots, ranks):
    plots.load(records(steps=10))
    for step, rank in enumerate(ranks, start=1):
        result = {"expected": "copy", "rank": rank, "probability": 0.1}
        plots.add("probe", {"step": step, "tokens_seen": step, "elapsed": step, "results": [result]})
    plots.redraw(everything=True)


def painted_labels(axis):
    """The tick marks and labels the axis paints, on screen and in the export."""
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    _, ticks, texts = axis.generateDrawSpecs(painter)
    painter.end()
    return ticks, [text for _, _, text in texts]


def test_the_probe_rank_axis_labels_each_decade_once(qtbot, plots):
    plots.resize(700, 420)
    probe_ranks(plots, (700, 300, 40, 1))
    qtbot.wait(10)
    axis = plots.plots["probes"].getAxis("left")
    low, high = plots.plots["probes"].vb.viewRange()[1]
    ticks, labelled = painted_labels(axis)
    assert len(ticks) > len(labelled) >= 2  # unlabelled minor ticks between the decades
    assert len(set(labelled)) <= math.ceil(high - low) + 1  # a decade's label is painted once per level, in place
    assert {"1", "10", "100"} <= set(labelled) <= {"0.1", "1", "10", "100", "1k", "10k"}  # the best rank, 1, too
    probe_ranks(plots, (3, 2, 1, 1))  # within a decade: still two decades labelled
    qtbot.wait(10)
    assert {"1", "10"} <= set(painted_labels(axis)[1])
    log_axis = CompactAxis("left")
    log_axis.setLogMode(False, True)
    assert log_axis.tickStrings([0.0, math.log10(2), math.log10(5), 1.0, 2.0, 3.0], 1.0, 1.0) == [
        "1", "", "", "10", "100", "1k"
    ]  # fmt: skip


def test_the_readout_follows_the_pointer_leaves_with_it_and_is_reset_by_a_new_run(qtbot, plots):
    data = records()
    plots.load(data)
    qtbot.wait_until(lambda: plots.plots["learning_rate"].vb.viewRange()[0][1] > 100)
    position = plots.plots["learning_rate"].vb.mapViewToScene(QPointF(120.2, 1e-3))
    with qtbot.waitSignal(plots.hovered) as said:
        plots.view.scene().sigMouseMoved.emit(position)
    assert said.args[0] == "learning rate 0.001 at step 120"  # named once, a plain number
    assert plots.cursors["learning_rate"].isVisible() and plots.cursors["learning_rate"].value() == 120
    assert not plots.cursors["loss"].isVisible()
    plots.set_axis("tokens")
    assert plots.readout("throughput", 4096 * 7) == "tokens/s 10,000 tokens/s at 28,672 tokens"
    plots.set_axis("time")
    assert plots.readout("learning_rate", 10.0).endswith("at 0m10s")
    with qtbot.waitSignal(plots.hovered) as said:
        QApplication.sendEvent(plots, QEvent(QEvent.Type.Leave))  # the pointer leaves the plots
    assert said.args[0] == "" and not plots.cursors["learning_rate"].isVisible()
    plots.view.scene().sigMouseMoved.emit(position)
    with qtbot.waitSignal(plots.hovered) as said:
        plots.load(records(steps=10))  # a new run
    assert said.args[0] == "" and not any(cursor.isVisible() for cursor in plots.cursors.values())


def test_an_undefined_precision_draws_without_numpy_warnings(qtbot, plots):
    record = electra_records(steps=50, eval_every=50)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plots.load(record)
        plots.reset_zoom()
        plots.view.grab()
    assert len(plots.curves["eval_detection_precision"].getData()[0] or []) == 0
    assert "precision (val) —" in plots.readout("detection", 50)


def test_a_run_without_probes_says_in_their_plot_what_would_fill_it(qtbot, plots):
    hint = plots.hints["probes"]
    without = [r for r in records(steps=100) if r["type"] != "probe"]
    plots.load(without)
    assert hint.isVisible() and "ranked here at every evaluation" in hint.toPlainText()
    plots.set_hint("probes", "This run has no cloze probes.")  # what the panel knows of the run
    assert hint.isVisible() and hint.toPlainText() == "This run has no cloze probes."
    view = plots.plots["probes"].vb.sceneBoundingRect()
    assert view.contains(hint.sceneBoundingRect())  # inside the plot's data area, wrapped to its width
    plots.load(records(steps=100))  # a run with probes: their curves, no hint
    assert not hint.isVisible() and plots.plots["probes"].listDataItems()
    plots.clear()  # a new run starts without probes until one is scored
    assert hint.isVisible()


def test_the_accuracy_axis_reads_percentages_as_the_readout_does(qtbot, plots):
    plots.load(records(steps=100))
    plots.redraw(everything=True)
    qtbot.wait(10)
    _, labels = painted_labels(plots.plots["accuracy"].getAxis("left"))
    assert labels and all(label.endswith("%") for label in labels)
    assert CompactAxis("left", percent=True).tickStrings([0.0, 0.1, 0.2], 1.0, 0.1) == ["0%", "10%", "20%"]
    assert CompactAxis("left", percent=True).tickStrings([0.12, 0.125, 0.13], 1.0, 0.005) == ["12.0%", "12.5%", "13.0%"]
    _, loss_labels = painted_labels(plots.plots["loss"].getAxis("left"))  # not a share: plain numbers
    assert loss_labels and not any(label.endswith("%") for label in loss_labels)


SIX = ("loss", "accuracy", "learning_rate", "grad_norm", "throughput", "probes")


def test_an_overlaid_run_is_drawn_in_every_plot_it_has_values_for_over_one_x_range(qtbot, plots):
    plots.load(records(steps=95, eval_every=10))
    plots.overlay("longer", records(steps=150, eval_every=50))
    for name in SIX:
        overlaid = [key for key in plots.series if key.startswith("overlay:longer:") and plots._plot_of[key] == name]
        assert overlaid, name
        named = [legend.startswith("longer (") for legend in plots.legends[name].names]  # "longer (val)"
        assert any(named) if name in NAMED_PLOTS else "longer" in plots.legends[name].names, name  # its axis: what
    assert plots.legends["probes"].names == ["copy", "longer (copy)"]

    def ranges():
        return {name: plots.plots[name].vb.viewRange()[0] for name in SIX}

    qtbot.wait_until(lambda: all(high >= 150 for _, high in ranges().values()))
    for name, (low, high) in ranges().items():  # one x range, whichever run reaches further
        assert low == pytest.approx(ranges()["loss"][0], abs=1.5) and high == pytest.approx(150, abs=5), name


def test_a_single_point_gets_a_range_that_reads(qtbot, plots):
    step = records(steps=25)[24]
    plots.add("step", step)
    plots.redraw(everything=True)
    qtbot.wait_until(lambda: plots.plots["loss"].vb.viewRange()[0][1] > 25)
    for name in ("loss", "accuracy", "learning_rate", "throughput"):
        (x0, x1), (y0, y1) = plots.plots[name].vb.viewRange()
        assert -2 <= x0 <= 0 and 25 < x1 <= 35, name  # from 0 to a little past step 25, not 24.5 to 25.5
        value = step[{"throughput": "tokens_per_second"}.get(name, name)]
        assert y0 < value < y1 and y1 - y0 >= 0.1 * value, name  # not a range of nothing around one value


def test_empty_plots_show_no_placeholder_ticks(qtbot, plots):
    for name in SIX:
        for side in ("left", "bottom"):
            assert painted_labels(plots.plots[name].getAxis(side)) == ([], []), (name, side)
    plots.load(records(steps=20, eval_every=10))
    qtbot.wait(10)
    for name in SIX:
        assert painted_labels(plots.plots[name].getAxis("bottom"))[1], name
    plots.clear()
    assert painted_labels(plots.plots["loss"].getAxis("left")) == ([], [])
