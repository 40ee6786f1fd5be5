"""One static HTML file: tables, plots embedded as base64 PNG, per-kernel drill-down.

Everything from the run (kernel sources, model responses, error messages) goes through jinja2's
autoescaping; the only script is a small inline filter for the kernel list.
"""

from __future__ import annotations

import base64
from pathlib import Path

import jinja2
from markupsafe import Markup

from .. import metrics as M
from ..turns import turn_label
from . import audit as A
from . import text as T
from .build import ALL, BASIS, Report
from .plots import render_all, skipped_plots

TEMPLATE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>Kernel report — {{ rep.run }}</title>
<style>
 body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1280px; color: #1d1d1f; padding: 0 16px; }
 h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
 table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
 th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: right; vertical-align: top; }
 th { background: #f4f4f6; } td.l, th.l { text-align: left; }
 .naive { background: #fff8ec; } .verified { background: #eef6ff; }
 .v-correct { color: #1f7a4d; font-weight: 600; } .v-incorrect, .v-runtime_error { color: #b3401e; font-weight: 600; }
 .v-hack { color: #fff; background: #9b2226; padding: 0 4px; border-radius: 3px; }
 .v-compile_error, .v-no_code, .v-model_error, .v-timeout { color: #777; }
 .ci { color: #777; font-size: 11px; } .muted { color: #777; }
 pre { background: #f7f7f9; border: 1px solid #e3e3e6; padding: 8px; overflow-x: auto; font-size: 12px; max-height: 420px; }
 details { margin: 4px 0; } summary { cursor: pointer; }
 .plots img { max-width: 100%; border: 1px solid #eee; margin: 4px; }
 .plots { display: flex; flex-wrap: wrap; gap: 8px; }
 #filter { padding: 4px 8px; width: 320px; }
 .pass { color: #1f7a4d; } .fail { color: #b3401e; font-weight: 600; }
</style>
</head>
<body>
<h1>Can the model write kernels that beat PyTorch — and is the speedup real?</h1>
<p class="muted">Run <b>{{ rep.run }}</b> · {{ rep.n_attempts }} attempts · models {{ rep.models|join(", ") }} ·
strategies {{ rep.strategies|join(", ") }} · levels {{ rep.levels|join(", ") }} · N = {{ rep.universe.get("all", 0) }} problems ·
protocols {{ rep.protocols|join(", ") }} · fast_p and geomean on <b>{{ basis }}</b> · generated {{ rep.generated_at }}</p>
{% if noisy_warning %}<p class="fail">{{ noisy_warning }}</p>{% endif %}
{% if rep.unreadable %}<p class="fail">{{ rep.unreadable|length }} stored line(s)/record(s) could not be read; their rows are lost:
{% for u in rep.unreadable %}line {{ u.line }}{% if u.key %} ({{ u.key }}){% endif %}: {{ u.reason }}{% if not loop.last %}; {% endif %}{% endfor %}</p>{% endif %}

{% if hv %}
<h2 id="headline-view">Headline per system: {{ hv_protos|join(" / ") }} side by side</h2>
<p class="muted">{{ hv_title }}</p>
{% for g in hv %}
<h3>{{ g.heading }}</h3>
<table>
<tr>{% for h in g.headers %}<th{% if loop.index0 < g.left %} class="l"{% endif %}>{{ h }}</th>{% endfor %}</tr>
{% for r in g.rows %}<tr>{% for c in r %}<td{% if loop.index0 < g.left %} class="l"{% endif %}>{{ c }}</td>{% endfor %}</tr>
{% endfor %}
</table>
{% endfor %}
<ul class="muted">{% for n in hv_notes %}<li>{{ n }}</li>{% endfor %}</ul>
{% endif %}

<h2 id="headline">Headline: naive vs verified <span class="muted">({{ basis }})</span></h2>
<p class="muted">Each (problem, sample) counts its {{ turn_counts }}; best of k samples per problem.</p>
<table>
<tr><th class="l" rowspan="2">system</th><th rowspan="2">level</th><th rowspan="2">N</th>
<th colspan="{{ protos|length }}">correct</th><th colspan="{{ protos|length }}">fast_1</th><th colspan="{{ protos|length }}">geomean speedup over correct (n)</th>
<th colspan="{{ protos|length }}">Mem Eff (n)</th><th colspan="{{ protos|length }}">higher peak memory</th><th colspan="{{ protos|length }}">median SOL (n)</th>
<th colspan="{{ protos|length }}">accepted hacks</th><th class="l" rowspan="2">guard failures (measured)</th></tr>
<tr>{% for _ in range(7) %}{% for p in protos %}<th class="{{ p }}">{{ p }}</th>{% endfor %}{% endfor %}</tr>
{% for key, by in headline %}
<tr><td class="l">{{ sysname(key[0], key[1], key[3]) }}</td><td>{{ key[2] }}</td><td>{{ first(by).attempted }}</td>
{% for p in protos %}<td class="{{ p }}">{% if by[p] %}{{ by[p].correct }} ({{ pct(by[p].correct_rate.value) }}){{ ci(by[p].correct_rate, true) }}{% endif %}</td>{% endfor %}
{% for p in protos %}<td class="{{ p }}">{% if by[p] %}{{ pct(by[p].fast_p["fast_1"].value) }}{{ ci(by[p].fast_p["fast_1"], true) }}{% endif %}</td>{% endfor %}
{% for p in protos %}<td class="{{ p }}">{% if by[p] %}{{ x(by[p].geomean_speedup.value) }} (n={{ by[p].geomean_speedup.n }}){{ ci(by[p].geomean_speedup, false) }}{% endif %}</td>{% endfor %}
{% for p in protos %}<td class="{{ p }}">{% if by[p] %}{{ x(by[p].mem_eff.value) }} (n={{ by[p].mem_eff.n }}){{ ci(by[p].mem_eff, false) }}{% endif %}</td>{% endfor %}
{% for p in protos %}<td class="{{ p }}">{% if by[p] %}{{ pct(by[p].higher_memory_share.value) }} <span class="ci">of {{ by[p].higher_memory_share.n }}</span>{% endif %}</td>{% endfor %}
{% for p in protos %}<td class="{{ p }}">{% if by[p] and by[p].sol_median.value is not none %}{{ "%.2f"|format(by[p].sol_median.value) }} <span class="ci">n={{ by[p].sol_median.n }}</span>{% endif %}</td>{% endfor %}
{% for p in protos %}<td class="{{ p }}">{% if by[p] %}{{ by[p].accepted_hacks }}{% endif %}</td>{% endfor %}
<td class="l">{{ guards(first(by)) }}</td>
</tr>
{% endfor %}
</table>
{% if vs_compile %}
<h3>Against torch.compile <span class="muted">(torch.compile(Model), default mode, as the baseline: same kernels, verdicts and timers; point estimates)</span></h3>
<table>
<tr><th class="l" rowspan="2">system</th><th rowspan="2">level</th><th rowspan="2">N</th>
<th colspan="{{ protos|length }}">fast_1 vs compile</th><th colspan="{{ protos|length }}">geomean vs compile (n)</th></tr>
<tr>{% for _ in range(2) %}{% for p in protos %}<th class="{{ p }}">{{ p }}</th>{% endfor %}{% endfor %}</tr>
{% for key, by in vs_compile %}
<tr><td class="l">{{ sysname(key[0], key[1], key[3]) }}</td><td>{{ key[2] }}</td><td>{{ first(by).attempted }}</td>
{% for p in protos %}<td class="{{ p }}">{% if by[p] %}{{ pct(by[p].fast_p["fast_1"].value) }}{{ ci(by[p].fast_p["fast_1"], true) }}{% endif %}</td>{% endfor %}
{% for p in protos %}<td class="{{ p }}">{% if by[p] %}{{ x(by[p].geomean_speedup.value) }} (n={{ by[p].geomean_speedup.n }}){{ ci(by[p].geomean_speedup, false) }}{% endif %}</td>{% endfor %}
</tr>
{% endfor %}
</table>
{% endif %}
<h3>fast_p for every p <span class="muted">({{ basis }})</span></h3>
<table>
<tr><th class="l">system</th><th>level</th><th class="l">protocol</th>{% for q in fast_ps %}<th>fast_{{ q }}</th>{% endfor %}</tr>
{% for key, by in headline %}{% for p in protos %}{% if by[p] %}
<tr class="{{ p }}"><td class="l">{{ sysname(key[0], key[1], key[3]) }}</td><td>{{ key[2] }}</td><td class="l">{{ p }}</td>
{% for q in fast_ps %}<td>{{ pct(by[p].fast_p["fast_" ~ q].value) }}{{ ci(by[p].fast_p["fast_" ~ q], true) }}</td>{% endfor %}</tr>
{% endif %}{% endfor %}{% endfor %}
</table>
<p class="muted">fast_p = share of all N problems (missing or failed count as not fast) that are correct with speedup &gt; p; best of k samples per problem; speedups counted: {{ basis_long }}. Brackets: 95% bootstrap interval over problems.</p>

<h2 id="waterfall">Waterfall: from naive to verified, one component at a time</h2>
{% for w in waterfalls %}
{% if w.level != "all" %}<details><summary>{{ sysname(w.model, w.strategy, w.precision) }} · level {{ w.level }}</summary>{% else %}
<h3>{{ sysname(w.model, w.strategy, w.precision) }} · all levels <span class="muted">({{ basis }})</span></h3>{% endif %}
<table>
<tr><th class="l">step</th><th class="l">adds</th><th>correct</th><th>geomean</th><th>× prev</th><th>fast_1</th><th>Δ fast_1</th><th>verdicts changed</th><th>fast lost</th></tr>
{% for s in w.steps %}
<tr><td class="l">{{ s.step }}</td><td class="l">{{ s.label }}{% if s.not_applicable %} <span class="muted">(does not apply to {{ s.not_applicable }} kernel(s): unchanged)</span>{% endif %}</td><td>{{ s.correct }}/{{ s.attempted }}</td>
<td>{{ x(s.geomean.value) }}{{ ci(s.geomean, false) }}</td><td>{{ x(s.d_geomean) }}</td>
<td>{{ pct(s.fast_1.value) }}{{ ci(s.fast_1, true) }}</td><td>{% if s.d_fast_1 is not none %}{{ "%+.0f"|format(100 * s.d_fast_1) }} pts{% endif %}</td>
<td>{{ s.verdicts_changed }}</td><td>{{ s.fast_lost }}</td></tr>
{% endfor %}
</table>
<details><summary>Each component alone (on naive) and left out (of verified)</summary>
<table><tr><th class="l">component</th><th>geomean alone</th><th>fast_1 alone</th><th>correct alone</th><th>geomean without</th><th>fast_1 without</th><th>correct without</th></tr>
{% for a in w.components %}<tr><td class="l">{{ a.step }}</td><td>{{ x(a.geomean_alone) }}</td><td>{{ pct(a.fast_1_alone) }}</td><td>{{ a.correct_alone }}</td><td>{{ x(a.geomean_without) }}</td><td>{{ pct(a.fast_1_without) }}</td><td>{{ a.correct_without }}</td></tr>{% endfor %}
</table></details>
{% if w.level != "all" %}</details>{% endif %}
{% endfor %}
{% if plots.get("waterfall") %}<div class="plots"><img alt="waterfall" src="data:image/png;base64,{{ plots.get("waterfall") }}"></div>{% endif %}

<h3 id="changes">Why each kernel's result moved</h3>
<table>
<tr><th class="l">system</th><th class="l">problem</th><th>sample</th><th>turn</th><th>naive</th><th>verified</th><th class="l">responsible steps</th><th class="l">why</th></tr>
{% for k in changes %}
<tr><td class="l">{{ sysname(k.model, k.strategy, k.precision) }}</td><td class="l"><a href="#k-{{ anchor(k) }}">{{ k.problem_id }}</a></td><td>{{ k.sample }}</td><td>{{ k.turn }}{% if not k.final %} <span class="ci">(not final)</span>{% endif %}</td>
<td><span class="v-{{ k.steps[0].verdict }}">{{ k.steps[0].verdict }}</span> {{ vx(k.steps[0].verdict, k.steps[0].speedup) }}</td>
<td><span class="v-{{ k.steps[-1].verdict }}">{{ k.steps[-1].verdict }}</span> {{ vx(k.steps[-1].verdict, k.steps[-1].speedup) }}</td>
<td class="l">{{ k.verdict_changed_at or k.fast_1_changed_at or k.largest_speedup_move_at }}{% if k.verdict_changed_at %}{% for c in k.later_changes %}, {{ c.split(":")[0] }}{% endfor %}{% endif %}</td><td class="l">{{ k.explanation }}</td></tr>
{% endfor %}
</table>

<h2 id="audit">Audit: kernels whose verdict changed ({{ rep.audit|length }})</h2>
<p class="muted">Every evaluated turn whose naive and verified verdicts differ: the first waterfall step that changes
the verdict, the failing trials, the parameter mapping used for the perturbed parameters and every failed guard
(the same blocks as <code>python -m agents.report RUN --audit</code>).</p>
{% for e in rep.audit %}
<div class="audit" id="audit-{{ loop.index }}">
<h3><a href="#k-{{ anchor(e) }}">{{ e.problem_id }}</a> · {{ sysname(e.model, e.strategy, e.precision) }} · sample {{ e.sample }} · turn {{ e.turn }}{% if not e.final %} <span class="ci">(not final)</span>{% endif %}{% if e.candidate_hash %} <span class="ci">candidate {{ e.candidate_hash[:12] }}</span>{% endif %}</h3>
<table>
<tr><th class="l">verdict</th><td class="l">naive <span class="v-{{ e.naive_verdict }}">{{ e.naive_verdict }}</span> {{ vx(e.naive_verdict, e.naive_speedup) }} → verified <span class="v-{{ e.verified_verdict }}">{{ e.verified_verdict }}</span> {{ vx(e.verified_verdict, e.verified_speedup) }}</td></tr>
<tr><th class="l">responsible step</th><td class="l"><b>{{ e.step }}</b>: {{ e.change }} <span class="muted">({{ e.step_label }})</span>{% for s in e.path[1:] %}<br>then {{ s.step }}: {{ s.before }} → {{ s.after }}{% endfor %}</td></tr>
{% if e.status != "ok" %}<tr><th class="l">status</th><td class="l">{{ e.status }}: {{ e.error or "" }}</td></tr>{% endif %}
<tr><th class="l">failing trials</th><td class="l">{% if e.failing_trials %}
<table><tr><th class="l">set</th><th class="l">distribution</th><th>seed</th><th class="l">params</th><th>max abs</th><th>max rel</th><th>needs tol</th><th>allowed</th><th>TF32 baseline error</th><th>k × TF32</th><th class="l">fails from</th><th class="l">why</th></tr>
{% for t in e.failing_trials %}<tr><td class="l">{{ t.trials }}</td><td class="l">{{ t.distribution }}</td><td>{{ t.seed }}</td><td class="l">{{ t.params }}</td><td>{{ g(t.max_abs) }}</td><td>{{ g(t.max_rel) }}</td><td>{{ g(t.needed_tolerance) }}</td><td>{{ g(t.tolerance) }}</td><td>{{ g(t.tf32_baseline_max_abs) }}</td><td>{{ g(t.tf32_allowance) }}</td><td class="l">{{ t.first_fails_at or "-" }}</td><td class="l">{{ t.why }}</td></tr>
{% endfor %}</table>{% else %}none{% endif %}</td></tr>
<tr><th class="l">parameters</th><td class="l">{{ params_line(e.params) }}</td></tr>
<tr><th class="l">failed guards</th><td class="l">{% for gd in e.failed_guards %}<span class="{{ 'fail' if gd.counted else 'muted' }}">{{ guard_line(gd) }}</span>{% if not loop.last %}<br>{% endif %}{% else %}none{% endfor %}</td></tr>
</table>
</div>
{% else %}
<p>No kernel's verdict differs between the two protocols.</p>
{% endfor %}

{% for j in judges %}
<h2 id="judge-{{ loop.index }}">LLM judge {{ j.s.judge }}{% if j.s.judge_models %} ({{ j.s.judge_models|join(", ") }}){% endif %} on fast survivors ({{ j.s.kernels }})</h2>
<p class="muted">Verified-correct kernels at or above {{ j.s.min_speedup }}x, each read by the model with its problem and
evidence (<code>python -m agents.audit RUN --judge ...</code>); its answer is shown beside the verdict and changes none.
{% for k, v in j.s.by_category|dictsort %}{{ k }} {{ v }}{% if not loop.last %}, {% endif %}{% endfor %} · {{ j.cost }}</p>
<table><tr><th class="l">system</th><th class="l">problem</th><th>sample</th><th>turn</th><th>verified</th><th class="l">judge says</th><th class="l">reason / note</th></tr>
{% for e in j.entries %}<tr><td class="l">{{ sysname(e.model, e.strategy, e.precision) }}</td><td class="l">{{ e.problem_id }}</td><td>{{ e.sample }}</td><td>{{ e.turn }}</td><td>{{ x(e.verified_speedup) }}</td>
<td class="l">{% if e.category %}<b>{{ e.category }}</b>{% else %}<span class="muted">{{ e.status }}</span>{% endif %}{% if e.status == "schema_error" %} <span class="ci">(schema error)</span>{% endif %}</td>
<td class="l">{% if e.status in ("judged", "schema_error") %}{{ e.reason }}{% else %}<span class="muted">{{ e.note }}</span>{% endif %}</td></tr>
{% endfor %}</table>
{% endfor %}

<h2 id="plots">Plots</h2>
<div class="plots">
{% for name in ["fast_p", "speedup_scatter", "speedup_hist", "sol_hist"] %}{% if plots.get(name) %}<img alt="{{ name }}" src="data:image/png;base64,{{ plots.get(name) }}">{% elif skipped_plots.get(name) %}<p class="muted">{{ name }} not drawn: {{ skipped_plots.get(name) }}</p>{% endif %}{% endfor %}
</div>

<h2 id="ablations">Ablations</h2>
<h3>By prompt strategy (level all)</h3>
<table><tr><th class="l">model</th><th class="l">strategy</th><th class="l">protocol</th><th>correct</th><th>fast_1</th><th>geomean (n)</th></tr>
{% for r in strategy_rows %}<tr><td class="l">{{ r.model }}</td><td class="l">{{ r.strategy }}</td><td class="l {{ r.protocol }}">{{ r.protocol }}</td><td>{{ r.summary.correct }}/{{ r.summary.attempted }}</td><td>{{ pct(r.summary.fast_p["fast_1"].value) }}</td><td>{{ x(r.summary.geomean_speedup.value) }} (n={{ r.summary.geomean_speedup.n }})</td></tr>{% endfor %}
</table>
<h3>By turn (each (problem, sample) as of turn t)</h3>
<table><tr><th class="l">system</th><th class="l">protocol</th><th>turn</th><th>correct</th>{% for q in fast_ps %}<th>fast_{{ q }}</th>{% endfor %}<th>geomean (n)</th></tr>
{% for r in rep.by_turn %}<tr><td class="l">{{ sysname(r.model, r.strategy, r.precision) }}</td><td class="l {{ r.protocol }}">{{ r.protocol }}</td><td>{{ r.turn }}</td><td>{{ r.correct }}/{{ r.attempted }}</td>{% for q in fast_ps %}<td>{{ pct(r.fast_p["fast_" ~ q]) }}</td>{% endfor %}<td>{{ x(r.geomean) }} (n={{ r.n_geomean }})</td></tr>{% endfor %}
</table>

{% if rep.compare is not none %}
<h2 id="compare">Compare: {{ rep.run }} (A) vs {{ rep.compare_run }} (B)</h2>
{% if rep.compare_note %}<p>{{ rep.compare_note }}</p>{% endif %}
<table><tr><th class="l">system</th><th>level</th><th class="l">protocol</th><th>correct A</th><th>correct B</th><th>fast_1 A</th><th>fast_1 B</th><th>geomean A</th><th>geomean B</th></tr>
{% for r in rep.compare %}<tr><td class="l">{{ sysname(r.model, r.strategy, r.precision_a or r.precision_b or "fp32") }}{% if r.precision_a and r.precision_b and r.precision_a != r.precision_b %} (A {{ r.precision_a }}, B {{ r.precision_b }}){% endif %}</td><td>{{ r.level }}</td><td class="l">{{ r.protocol }}</td><td>{{ r.a.get("correct", "-") }}</td><td>{{ r.b.get("correct", "-") }}</td><td>{{ pct(r.a.get("fast_1")) }}</td><td>{{ pct(r.b.get("fast_1")) }}</td><td>{{ x(r.a.get("geomean")) }}</td><td>{{ x(r.b.get("geomean")) }}</td></tr>{% endfor %}
</table>
{% endif %}

<h2 id="kernels">Kernels</h2>
<p><input id="filter" type="search" placeholder="filter: problem, model, verdict…" aria-label="filter kernels"> <span id="shown" class="muted"></span></p>
<div id="kernel-list">
{% for k in rep.kernels %}
<details class="kernel" id="k-{{ anchor(k) }}" data-search="{{ k.model }} {{ k.strategy }} {{ k.problem_id }} {{ k.final.verdicts.values()|join(' ') }}">
<summary><b>{{ k.problem_id }}</b> · {{ sysname(k.model, k.strategy, k.precision) }} · sample {{ k.sample }} · {{ k.turns|length }} turn(s) ·
{% for p in protos %}{{ p }}: <span class="v-{{ k.final.verdicts.get(p) }}">{{ k.final.verdicts.get(p) }}</span> {{ vx(k.final.verdicts.get(p), k.final.speedups.get(p)) }}{% if k.final.verdicts.get(p) == 'correct' %}{{ iv(k.final.intervals.get(p)) }}{% endif %}{% if k.final.noise.get(p) %} <span class="fail">noisy</span>{% endif %}{% if not loop.last %} · {% endif %}{% endfor %}{% if k.final.shape_specialised %} · <span class="fail">shape-specialised</span>{% endif %}</summary>
{% for t in k.turns %}
<details {% if loop.last %}open{% endif %}><summary>turn {{ t.turn }}{% if t.status %} · status {{ t.status }}{% endif %}</summary>
<table><tr><th class="l">protocol</th><th class="l">verdict</th><th>speedup [95%]</th><th>counted ({{ basis }})</th><th class="l">noisy</th><th>SOL</th><th class="l">reasons</th></tr>
{% for p in protos %}<tr><td class="l {{ p }}">{{ p }}</td><td class="l"><span class="v-{{ t.verdicts.get(p) }}">{{ t.verdicts.get(p) }}</span></td><td>{{ vx(t.verdicts.get(p), t.speedups.get(p)) }}{% if t.verdicts.get(p) == 'correct' %}{{ iv(t.intervals.get(p)) }}{% endif %}</td>
<td>{{ vx(t.verdicts.get(p), t.credited.get(p)) }}</td><td class="l">{% if t.noise.get(p) %}<span class="fail">yes</span>: {{ t.noise.get(p)|join("; ") }}{% else %}no{% endif %}</td>
<td>{% if t.sol_scores.get(p) is not none %}{{ "%.2f"|format(t.sol_scores.get(p)) }}{% endif %}</td><td class="l">{{ t.reasons.get(p, [])|join("; ") }}</td></tr>{% endfor %}
</table>
{% if t.shapes %}<p class="{{ 'fail' if t.shape_specialised else '' }}">extra shapes: {{ t.shapes[0] }}</p>{% if t.shapes|length > 1 %}<ul>{% for line in t.shapes[1:] %}<li>{{ line }}</li>{% endfor %}</ul>{% endif %}{% endif %}
{% if t.memory_ratio is not none %}<p>peak memory kernel / baseline: {{ "%.2f"|format(t.memory_ratio) }}</p>{% endif %}
{% if t.guards %}<p>guards: {% for g in t.guards %}<span class="{{ 'pass' if g.passed else 'fail' }}" title="{{ g.detail }}">{{ g.name }}{{ '' if g.passed else ' ✗' }}</span>{% if not loop.last %}, {% endif %}{% endfor %}</p>
{% for g in t.guards if not g.passed %}<p class="fail">{{ g.name }}: {{ g.detail }}</p>{% endfor %}{% endif %}
{% if t.provenance %}<p class="muted">provenance: {% for key, v in t.provenance.items() %}{{ key }}={{ v }}{% if not loop.last %}, {% endif %}{% endfor %}</p>{% endif %}
{% if t.error %}<pre>{{ t.error }}</pre>{% endif %}
{% if t.model_error %}<p class="fail">model error: {{ t.model_error }}</p>{% endif %}
{% if t.extraction_error %}<p class="fail">extraction: {{ t.extraction_error }}</p>{% endif %}
{% if t.kernel_source %}<details><summary>kernel source ({{ t.kernel_source|length }} chars)</summary><pre>{{ clip(t.kernel_source) }}</pre></details>
{% elif t.kernel_hash %}<p class="muted">kernel source not stored in this run (sha256 {{ t.kernel_hash[:16] }}…)</p>
{% else %}<details><summary>response (no kernel)</summary><pre>{{ clip(t.response) }}</pre></details>{% endif %}
{% if t.feedback %}<details><summary>feedback shown before the next turn</summary><pre>{{ clip(t.feedback) }}</pre></details>{% endif %}
</details>
{% endfor %}
</details>
{% endfor %}
</div>

<h2 id="notes">Notes</h2>
<ul>{% for n in rep.notes %}<li>{{ n }}</li>{% endfor %}</ul>
<script>
(function () {
  var box = document.getElementById("filter");
  var items = Array.prototype.slice.call(document.querySelectorAll("#kernel-list > details.kernel"));
  var shown = document.getElementById("shown");
  function apply() {
    var q = box.value.toLowerCase().trim();
    var n = 0;
    items.forEach(function (el) {
      var hit = !q || el.getAttribute("data-search").toLowerCase().indexOf(q) !== -1;
      el.style.display = hit ? "" : "none";
      if (hit) { n += 1; }
    });
    shown.textContent = n + " of " + items.length + " kernels";
  }
  box.addEventListener("input", apply);
  apply();
})();
</script>
</body>
</html>
"""

MAX_SOURCE = 40_000


def _prec(k) -> str:
    """An anchor's precision part: none for fp32 (the anchors of fp32 runs are unchanged)."""
    p = getattr(k, "precision", "fp32")
    return "" if p == "fp32" else f"{p}-"


def _env() -> jinja2.Environment:
    return jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render_html(rep: Report, plots: dict[str, bytes] | None = None) -> str:
    if plots is None:
        plots = render_all(rep)
    protos = [p.split("@")[0] for p in rep.protocols]

    def grouped(rows) -> dict[tuple[str, str, str, str], dict]:  # every protocol present, None where a row lacks it
        out: dict[tuple[str, str, str, str], dict] = {}  # (model, strategy, level, precision)
        for r in rows:
            out.setdefault((r.model, r.strategy, r.level, r.precision), dict.fromkeys(protos))[r.protocol] = r.summary
        return out

    headline, vs_compile = grouped(rep.headline), grouped(rep.headline_vs_compile)

    def ci(e: M.Estimate, is_pct: bool):
        if e.lo is None or e.hi is None:
            return ""
        f = T.pct if is_pct else T.x
        return Markup('<br><span class="ci">[{}, {}]</span>').format(f(e.lo), f(e.hi))

    changes = [k for k in rep.kernel_changes if k.explanation != "unchanged"]
    from ..audit.judge import cost_line, summarize

    judges = [{"s": summarize(rep.judge, j), "cost": cost_line(summarize(rep.judge, j)),
               "entries": [e for e in rep.judge if e.judge == j]} for j in sorted({e.judge for e in rep.judge})]
    return _env().from_string(TEMPLATE).render(
        rep=rep, protos=protos, fast_ps=[f"{p:g}" for p in M.FAST_P], headline=list(headline.items()),
        vs_compile=list(vs_compile.items()),
        waterfalls=[w for w in rep.waterfalls if w.level == ALL] + [w for w in rep.waterfalls if w.level != ALL],
        hv=T.headline_grids(rep.headline_view) if rep.headline_view else [],
        hv_protos=rep.headline_view.protocols if rep.headline_view else [],
        hv_title=T.headline_title(rep.headline_view) if rep.headline_view else "",
        hv_notes=T.headline_notes(rep.headline_view) if rep.headline_view else [],
        changes=changes, judges=judges, noisy_warning=T.noisy_warning(rep), strategy_rows=[r for r in rep.headline if r.level == ALL],
        plots={k: base64.b64encode(v).decode() for k, v in plots.items()},
        turn_counts=turn_label(rep.turn_policy), skipped_plots=skipped_plots(rep), x=T.x, vx=T.vx, pct=T.pct, ci=ci, iv=T.interval, basis=T.basis(rep), basis_long=BASIS[rep.fast_p_on], guards=lambda s: T.guards_cell(s, limit=6),
        g=A.g, params_line=A.params_line, guard_line=A.guard_line,
        first=lambda by: next(v for v in by.values() if v is not None),
        sysname=lambda m, s, p="fp32": T.system(rep, m, s, p),
        anchor=lambda k: f"{k.model}-{k.strategy}-{_prec(k)}{k.problem_id}-{k.sample}".replace("/", "-").replace(" ", "_"),
        clip=lambda s: s if s is None or len(s) <= MAX_SOURCE else s[:MAX_SOURCE] + "\n… (truncated)",
    )


def write_html(rep: Report, path: str | Path, plots: dict[str, bytes] | None = None) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_html(rep, plots), encoding="utf-8")
    return p
