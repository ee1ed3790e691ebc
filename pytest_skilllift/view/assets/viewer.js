/* skilllift view: builds each page from its JSON data block.
 *
 * Everything of the week (answers, quotes, prompts, rubric texts, names) is data: it reaches
 * the page only through textContent and setAttribute on attributes that are never URLs of
 * the week's choosing. No innerHTML, no inline handlers, no network except the labelling
 * server's own /api/ (served mode only). */
(function () {
  "use strict";

  var body = document.body;
  var ROOT = body.getAttribute("data-root") || "";
  var DATA = JSON.parse(document.getElementById("skilllift-data").textContent);
  var app = document.getElementById("app");

  // ------------------------------------------------------------------ building blocks
  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (attrs[k] !== null && attrs[k] !== undefined && attrs[k] !== false) {
          node.setAttribute(k, String(attrs[k]));
        }
      });
    }
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function add(node, child) {
    if (child === null || child === undefined || child === false) return node;
    if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); return node; }
    node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function isNum(x) { return typeof x === "number" && isFinite(x); }
  /* x to d decimals as the scorecard prints it (Python's format: an exact tie such as a mean
   * reward of 0.5625 rounds to even, 0.562, where toFixed gives 0.563). */
  function fixed(x, d) {
    var m = Math.pow(10, d), y = x * m, fl = Math.floor(y);
    if (y - fl === 0.5) return ((fl % 2 === 0 ? fl : fl + 1) / m).toFixed(d);
    return x.toFixed(d);
  }
  function f3(x) { return isNum(x) ? fixed(x, 3) : "n/a"; }
  function signed(x) { return isNum(x) ? (x >= 0 ? "+" : "") + fixed(x, 3) : "n/a"; }
  function pct(x) { return isNum(x) ? (100 * x).toFixed(0) + "%" : "n/a"; }
  function usd(x) { return isNum(x) ? "$" + x.toFixed(4) : "n/a"; }
  function secs(ms) { return isNum(ms) ? (ms / 1000).toFixed(1) + " s" : "n/a"; }
  function section(title, id) {
    var s = el("section", { id: id || null, "class": "card" }, el("h2", null, title));
    app.appendChild(s);
    return s;
  }
  function link(href, text) {
    // Only the site's own relative pages are linked (names are made file-safe by Python).
    return el("a", { href: href }, text);
  }
  function kv(pairs) {
    var dl = el("dl", { "class": "kv" });
    pairs.forEach(function (p) {
      if (p[1] === null || p[1] === undefined || p[1] === "") return;
      var v = p[1];
      if (typeof v === "object" && !(v instanceof Node)) v = JSON.stringify(v);
      add(dl, [el("dt", null, p[0]), el("dd", null, v)]);
    });
    return dl;
  }

  /* A sortable table: columns are {label, value(row) -> sortable, cell(row) -> node|text}. */
  function table(columns, rows, attrs) {
    var t = el("table", attrs || { "class": "sortable" });
    if (!t.getAttribute("class")) t.setAttribute("class", "sortable");
    var thead = el("thead"), tr = el("tr"), tbody = el("tbody");
    var state = { col: -1, dir: 1 };
    columns.forEach(function (c, i) {
      var btn = el("button", { type: "button", "class": "sort", "data-col": i }, c.label);
      btn.addEventListener("click", function () {
        state.dir = state.col === i ? -state.dir : 1;
        state.col = i;
        var sorted = rows.slice().sort(function (a, b) {
          var x = c.value(a), y = c.value(b);
          var nx = x === null || x === undefined || x === "", ny = y === null || y === undefined || y === "";
          if (nx || ny) return nx === ny ? 0 : (nx ? 1 : -1);
          if (typeof x === "number" && typeof y === "number") return state.dir * (x - y);
          return state.dir * String(x).localeCompare(String(y));
        });
        Array.prototype.forEach.call(thead.querySelectorAll("th"), function (th, j) {
          th.setAttribute("aria-sort", j === i ? (state.dir > 0 ? "ascending" : "descending") : "none");
        });
        fill(sorted);
      });
      tr.appendChild(el("th", { scope: "col", "aria-sort": "none" }, btn));
    });
    thead.appendChild(tr);
    function fill(list) {
      clear(tbody);
      list.forEach(function (r) {
        var row = el("tr");
        columns.forEach(function (c) {
          var v = c.cell ? c.cell(r) : c.value(r);
          var td = el("td", c.num ? { "class": "num" } : null, v);
          if (c.attrs) { var a = c.attrs(r); Object.keys(a).forEach(function (k) { td.setAttribute(k, a[k]); }); }
          row.appendChild(td);
        });
        tbody.appendChild(row);
      });
    }
    fill(rows);
    add(t, [thead, tbody]);
    return t;
  }
  function col(label, key, fmt, num) {
    return { label: label, num: !!num, value: function (r) { return r[key]; },
             cell: function (r) { return fmt ? fmt(r[key]) : (r[key] === null || r[key] === undefined ? "" : r[key]); } };
  }

  // ------------------------------------------------------------------ overview
  function promptsTable(rows, pages, withUnscored) {
    var prows = rows.slice();
    if (withUnscored) {
      Object.keys(pages).forEach(function (p) {
        if (!prows.some(function (r) { return r.prompt === p; })) prows.push({ prompt: p, model: "" });
      });
    }
    return table([
      { label: "prompt", value: function (r) { return r.prompt; },
        cell: function (r) { return pages[r.prompt] ? link(pages[r.prompt], r.prompt) : r.prompt; } },
      col("model", "model"), col("no-skill", "must_no", f3, true), col("with-skill", "must_with", f3, true),
      { label: "lift", num: true, value: function (r) { return r.must_lift; },
        cell: function (r) { return el("span", { "class": isNum(r.must_lift) && r.must_lift < 0 ? "neg" : "" }, signed(r.must_lift)); } },
      col("composite no", "composite_no", f3, true), col("composite with", "composite_with", f3, true),
      col("reps", "reps_with", null, true)], prows, { "class": "sortable", id: "prompt-table" });
  }

  var SERVED = window.location.protocol === "http:";
  // A week with a banner (the demo, a dry run) was answered by the scripted stand-in.
  var SIMULATED = false;

  function overview(d) {
    if (d.banner) app.appendChild(el("p", { "class": "banner" }, d.banner));
    if (d.note) app.appendChild(el("p", { "class": "hint" }, d.note));
    if (d.verdict) app.appendChild(el("p", { "class": "verdict" }, el("strong", {}, d.verdict)));
    if (SERVED) {
      app.appendChild(el("p", { "class": "card" }, link("label.html", "Label a sample (blind) →"),
        " — the stratified sample skilllift label draws; labels go to labels.csv for skilllift judge-check."));
    }
    var pages = d.pages || {};
    var order = d.model_order || Object.keys(d.models || {});

    var head = section("Headline lift", "lift");
    add(head, el("p", { "class": "note" }, "must_coverage, with-skill − no-skill, mean over prompts; " +
      "95% t interval; the verdict is the sign test over prompts (qdrant/skills SCORING.md). " +
      "Every number is scorecard.json's."));
    var mrows = order.filter(function (m) { return d.models && d.models[m]; }).map(function (m) {
      var x = d.models[m], st = x.sign_test || {};
      return { model: m, no: x.must_no, wi: x.must_with, lift: x.must_lift, se: x.must_lift_se,
               lo: x.ci_low, hi: x.ci_high, ci: x.ci_excludes_zero, n: x.n_prompts,
               low: x.low_sample, verdict: st.verdict || "", reason: st.reason || "",
               blo: x.bootstrap_low, bhi: x.bootstrap_high };
    });
    add(head, table([
      col("model", "model"),
      col("no-skill", "no", f3, true),
      col("with-skill", "wi", f3, true),
      { label: "lift", num: true, value: function (r) { return r.lift; },
        cell: function (r) { return el("span", { "class": "lift", "data-model": r.model, "data-value": r.lift }, signed(r.lift)); } },
      col("± SE", "se", f3, true),
      { label: "95% CI", value: function (r) { return r.lo; },
        cell: function (r) {
          // A lift lies in [−1, 1]: the interval is clipped there, as in the scorecard.
          if (!isNum(r.lo) || !isNum(r.hi)) return "n/a";
          var lo = Math.max(-1, r.lo), hi = Math.min(1, r.hi);
          return "[" + f3(lo) + ", " + f3(hi) + "]" + (lo !== r.lo || hi !== r.hi ? " (clipped to [−1, 1])" : "");
        } },
      { label: "CI excludes 0", value: function (r) { return r.ci ? 1 : 0; },
        cell: function (r) { return el("span", { "class": r.ci ? "yes" : "no" }, r.ci ? "yes" : "no"); } },
      { label: "bootstrap 95%", value: function (r) { return r.blo; },
        cell: function (r) { return isNum(r.blo) ? "[" + f3(r.blo) + ", " + f3(r.bhi) + "]" : "n/a"; } },
      col("prompts", "n", null, true),
      { label: "verdict", value: function (r) { return r.verdict; },
        cell: function (r) { return el("span", { "class": "verdict", title: r.reason }, r.verdict + (r.low ? " (low sample)" : "")); } }
    ], mrows, { "class": "sortable", id: "lift-table" }));

    var rw = d.rewards;
    if (rw && rw.models && Object.keys(rw.models).length) {
      // Harbor tasks: the verifier's reward, never mixed into must coverage (docs/tasks.md).
      var rs = section("Task rewards", "rewards");
      add(rs, el("p", { "class": "note" }, "Reward lift: mean over tasks of (with-skill − no-skill mean reward over reps); " +
        rw.rewarded_runs + " of " + rw.task_runs + " task runs rewarded; a run passes at reward ≥ " + rw.pass_reward + ". Every number is scorecard.json's."));
      add(rs, table([
        col("model", "model"), col("no-skill", "reward_no", f3, true), col("with-skill", "reward_with", f3, true),
        { label: "reward lift", num: true, value: function (r) { return r.reward_lift; },
          cell: function (r) { return el("span", { "class": "reward-lift", "data-model": r.model, "data-value": r.reward_lift }, signed(r.reward_lift)); } },
        col("± SE", "reward_lift_se", f3, true), col("pass no", "pass_rate_no", pct, true),
        col("pass with", "pass_rate_with", pct, true), col("helped", "helped", null, true),
        col("hurt", "hurt", null, true), col("no-op", "no_op", null, true), col("tasks", "n_tasks", null, true)
      ], Object.keys(rw.models).map(function (m) { return Object.assign({ model: m }, rw.models[m]); }),
      { "class": "sortable", id: "reward-table" }));
    }

    var plots = d.plot_files || {};
    if (Object.keys(plots).length) {
      var pl = section("Plots", "plots");
      Object.keys(plots).forEach(function (k) {
        add(pl, el("figure", null, el("img", { src: plots[k], alt: k + " plot", "class": "plot" }), el("figcaption", null, k)));
      });
    }

    var g = section("Gates and coverage", "gates");
    var gr = d.gate_results || {}, rep = gr.report;
    if (gr.error) add(g, el("p", { "class": "error" }, gr.error));
    if (rep) {
      add(g, el("p", { id: "gate-verdict", "class": rep.passed ? "yes" : "neg" },
        rep.passed ? "Every hard gate passed (skilllift gate: exit 0)" : "A hard gate failed or the coverage guard tripped (skilllift gate: exit 1)"));
      add(g, table([col("gate", "gate"), col("scope", "scope"),
        { label: "measured", num: true, value: function (r) { return r.measured; },
          cell: function (r) { return isNum(r.measured) ? f3(r.measured) : (r.measured === null ? "n/a" : String(r.measured)); } },
        { label: "bar", value: function (r) { return r.threshold; }, cell: function (r) { return r.op + " " + r.threshold; } },
        { label: "kind", value: function (r) { return r.hard ? "hard" : "soft"; }, cell: function (r) { return r.hard ? "hard" : "soft"; } },
        { label: "result", value: function (r) { return r.passed ? 1 : 0; },
          cell: function (r) { return el("span", { "class": r.passed ? "yes" : "neg" }, r.passed ? "pass" : "FAIL"); } },
        col("note", "note")], rep.gates || [], { "class": "sortable", id: "gate-table" }));
    } else if (!gr.error) {
      add(g, el("p", { "class": "note" }, "No gates recorded in week.json (set them with --skill-lift-gate; skilllift gate WEEKDIR --gate EXPR measures any)."));
    }
    var cov = d.coverage || {};
    add(g, kv([["graded runs", (cov.graded_runs || 0) + " of " + (cov.total_runs || 0)],
               ["items graded", (cov.items_graded || 0) + " of " + (cov.items_total || 0)],
               ["items ungraded", cov.items_ungraded], ["items invalid", cov.items_invalid],
               ["dropped runs", (cov.dropped || []).length]]));
    if ((cov.dropped || []).length) {
      add(g, table([col("run", "run_id"), col("reason", "reason")], cov.dropped.map(function (x) {
        return typeof x === "object" ? x : { run_id: String(x), reason: "" };
      })));
    }

    var cells = section("Cells (model × arm)", "cells");
    add(cells, table([col("model", "model"), col("arm", "condition"),
      col("must coverage", "must_coverage", f3, true), col("bonus rate", "bonus_rate", f3, true),
      col("avoid violations", "avoid_violations", f3, true), col("composite", "composite", f3, true),
      col("pass rate", "pass_rate", f3, true), col("mean cost", "mean_cost", usd, true),
      col("mean turns", "mean_turns", f3, true), col("prompts", "n", null, true)], d.cells || []));

    var pr = section("Prompts", "prompts");
    if (d.all_prompts) {
      add(pr, el("p", { "class": "note" }, "The " + d.prompts.length + " rows with the largest |lift| of " +
        d.all_prompts.rows + " (" + d.all_prompts.pages + " prompt pages); every row: ", link(d.all_prompts.href, "all prompts →")));
    }
    add(pr, promptsTable(d.prompts || [], pages, !d.all_prompts));

    var h = d.history || {};
    var hs = section("History", "history");
    if (h.pending_text && !h.ready) add(hs, el("p", { "class": "note" }, h.pending_text));
    var hrows = Object.keys(h.per_model || {}).map(function (m) {
      var x = h.per_model[m]; return Object.assign({ model: m }, x);
    });
    add(hs, table([col("model", "model"), col("previous week", "prev_key"),
      col("previous lift", "prev_lift", signed, true), col("this week", "now_lift", signed, true),
      col("change", "delta", signed, true), col("threshold", "threshold", f3, true),
      { label: "actionable", value: function (r) { return r.actionable === null || r.actionable === undefined ? "" : String(r.actionable); },
        cell: function (r) { return r.actionable === null || r.actionable === undefined ? "n/a" : (r.actionable ? "yes" : "no"); } }], hrows));
    if (d.compare) add(hs, el("p", null, link(d.compare, "Compare with the other week →")));
    // The history's previous comparable week: a link to its compare page (built beside this
    // one, relative, so it works from file://), or the words saying why there is none.
    var hc = d.history_compare;
    if (!d.compare && hc && hc.href) {
      add(hs, el("p", { id: "history-compare", "data-week": hc.week },
        link(hc.href, "Compare with the previous comparable week " + hc.week + " (" + hc.week + " → " + (d.week || "this week") + ") →")));
    } else if (!d.compare && hc) {
      add(hs, el("p", { id: "history-compare", "class": "note", "data-week": hc.week }, hc.note));
    }

    var au = section("Audit and run health", "audit");
    var inv = (d.audit || {}).invocation || {};
    add(au, table([col("model", "model"), col("VERIFIED", "VERIFIED", null, true),
      col("PARTIAL", "PARTIAL", null, true), col("NOT_INVOKED", "NOT_INVOKED", null, true)],
      Object.keys(inv).map(function (m) { return Object.assign({ model: m }, inv[m]); })));
    var act = d.activation_summary || {};
    add(au, kv([["with-skill runs", act.with_skill_runs], ["trigger misses", act.trigger_misses],
                ["avoid violations", d.avoid_violations]]));
    var rh = d.run_health || {};
    add(au, kv(Object.keys(rh).map(function (k) { return [k.replace(/_/g, " "), rh[k]]; })));

    var ja = d.judge_audit;
    if (ja) {
      var js = section("Judge: family, panel, bias audit", "judge-audit");
      (ja.family_warnings || []).forEach(function (w) {
        add(js, el("p", { "class": "neg" }, "⚠ " + w.label + " (" + w.family + ") is graded by its own family's judge " +
          (w.judges || []).join(", ") + ": a warning, the verdicts stand."));
      });
      var pa = ja.panel;
      if (pa) {
        add(js, kv([["judges", (pa.judges || []).join(", ")], ["graded items", pa.items + " of " + pa.runs + " runs"],
                    ["contested items", pa.disagreed_items],
                    ["Krippendorff's alpha", isNum(pa.alpha) ? f3(pa.alpha) : "n/a"],
                    ["alpha 95% CI (runs resampled)", pa.alpha_ci95 ? "[" + f3(pa.alpha_ci95[0]) + ", " + f3(pa.alpha_ci95[1]) + "]" : "n/a"]]));
        add(js, table([col("judge A", "a"), col("judge B", "b"), col("items", "items", null, true),
          col("agreement", "agreement", f3, true), col("Cohen's kappa", "kappa", f3, true)], pa.kappa || []));
        var lcols = [col("model", "model"), col("panel lift", "panel", signed, true)].concat(
          (pa.judges || []).map(function (j) { return col("lift by " + j, j, signed, true); }));
        add(js, table(lcols, Object.keys(pa.lift || {}).map(function (m) { return Object.assign({ model: m }, pa.lift[m]); })));
      } else {
        add(js, el("p", { "class": "note" }, "One judge graded this week; --skill-lift-judges=a,b,c (or skilllift judge WEEK --judges …) reports a panel's agreement here."));
      }
      var sp = ja.self_preference || {};
      if (Object.keys(sp).length) {
        add(js, table([col("model", "model"), col("family", "family"), col("lift by own family", "lift_own", signed, true),
          col("lift by others", "lift_other", signed, true), col("difference", "difference", signed, true),
          col("± SE", "difference_se", f3, true)], Object.keys(sp).map(function (m) { return Object.assign({ model: m }, sp[m]); })));
      }
      var lk = ja.leakage || {}, lrows = [];
      Object.keys(lk).forEach(function (m) {
        Object.keys(lk[m]).forEach(function (a) { lrows.push(Object.assign({ model: m, arm: a }, lk[m][a])); });
      });
      add(js, el("p", { "class": "note" }, "Arm leakage: answers that name their skill (masked for the judge unless --skill-lift-judge-mask=off)."));
      add(js, table([col("model", "model"), col("arm", "arm"), col("runs", "runs", null, true),
        col("naming the skill", "leaking", null, true), col("masked", "masked", null, true)], lrows));
      var vb = ja.verbosity || {};
      add(js, table([col("model", "model"), col("lift", "lift", signed, true),
        col("lift at equal length", "lift_length_adjusted", signed, true),
        { label: "flag", value: function (r) { return r.flag ? 1 : 0; },
          cell: function (r) { return r.flag ? el("span", { "class": "neg" }, "lift may partly reflect longer answers") : ""; } }],
        Object.keys(vb).map(function (m) { return Object.assign({ model: m }, vb[m]); })));
    }

    var pv = section("Identity and provenance", "provenance");
    var id = d.identity || {}, p = d.provenance || {};
    add(pv, kv([["week", d.week], ["generator", d.generator],
      ["models", id.models], ["reps", id.reps], ["runner", id.runner], ["CLI", id.cli_version],
      ["allowed tools", (id.allowed_tools || []).join(", ")], ["permission mode", id.permission_mode],
      ["judge", id.judge_model], ["judge prompt", id.judge_prompt_version],
      ["judge samples", id.judge_samples], ["evidence policy", id.evidence],
      ["snapshots", p.snapshots], ["CLI versions", (p.cli_versions || []).join(", ")],
      ["skills commits", (p.skills_commits || []).join(", ")], ["window", p.window]]));

    var probs = (d.problems || []).concat(d.view_problems || []);
    if (probs.length) {
      var ps = section("Input problems", "problems");
      add(ps, el("ul", null, probs.map(function (x) { return el("li", null, typeof x === "string" ? x : JSON.stringify(x)); })));
    }
  }

  // ------------------------------------------------------------------ a prompt's page
  /* Whether a verdict is good for the answer: met (must/bonus), clean (avoid). */
  function good(type, v) { return type === "avoid" ? v === "clean" : v === "met"; }
  // The verdicts the judge gives a short reason for (week/columns.py NEEDS_REASON).
  var NEEDS_REASON = { missing: true, absent: true, violated: true };

  /* The answer with the quote marked: exact match first, then whitespace-insensitive. */
  function highlighted(answer, quote, cls) {
    var pre = el("pre", { "class": "answer-text" });
    if (!quote) { pre.textContent = answer; return { node: pre, found: false }; }
    var start = answer.indexOf(quote), end = start + quote.length;
    if (start < 0) {
      var words = quote.trim().split(/\s+/).map(function (w) { return w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); });
      var m = words.length ? new RegExp(words.join("\\s+")).exec(answer) : null;
      if (m) { start = m.index; end = start + m[0].length; }
    }
    if (start < 0) { pre.textContent = answer; return { node: pre, found: false }; }
    add(pre, [answer.slice(0, start), el("mark", { "class": cls || "evidence" }, answer.slice(start, end)), answer.slice(end)]);
    return { node: pre, found: true };
  }

  function trajectoryNode(run) {
    var wrap = el("div", { "class": "trajectory" }, el("h4", null, "Trajectory (" + (run.trajectory || []).length + " tool calls)"));
    if (run.trajectory_note) add(wrap, el("p", { "class": "note" }, run.trajectory_note));
    var ol = el("ol");
    (run.trajectory || []).forEach(function (s) {
      var cls = "step" + (s.denied ? " denied" : "") + (s.error ? " error" : "") + (s.tool === "Skill" ? " skill" : "");
      add(ol, el("li", { "class": cls }, el("code", null, s.tool), s.target ? " " + s.target : "",
        s.denied ? el("span", { "class": "tag denied" }, "denied") : null,
        s.error ? el("span", { "class": "tag error" }, "error") : null,
        s.subagent ? el("span", { "class": "tag" }, "subagent") : null,
        typeof s.result === "string" ? el("details", { "class": "result" },
          el("summary", null, "result" + (s.result_chars ? " (first " + s.result.length + " of " + s.result_chars + " characters)" : "")),
          el("pre", null, s.result)) : null));
    });
    add(wrap, ol);
    return wrap;
  }

  function runFacts(run) {
    var audit = run.audit || {};
    return kv([["run", run.run_id], ["status", run.status], ["audit", audit.status || run.invocation],
      ["audit evidence", audit.evidence], ["activation", run.activation],
      ["cost", usd(run.cost) + (SIMULATED && isNum(run.cost) ? " (simulated: nothing was paid)" : "")], ["turns", run.turns], ["duration", secs(run.duration_ms)]]);
  }

  function answerPanel(run, item, cell, active) {
    var panel = el("div", { "class": "answer" + (active ? " active" : ""), "data-run-id": run.run_id,
                            "data-condition": run.condition });
    add(panel, el("h3", null, run.condition + " r" + run.rep + (run.trigger_miss ? " — trigger miss" : "")));
    add(panel, runFacts(run));
    if (SERVED && run.run_id) add(panel, el("p", null, link(ROOT + "label.html?run=" + encodeURIComponent(run.run_id), "Label this run's items (blind) →")));
    if (active && cell && item) {
      var verdict = el("p", { "class": "verdict-line" }, item.type + "-" + item.index + ": ",
        el("strong", null, cell.v), cell.c ? el("span", { "class": "tag contested" }, "contested") : null);
      add(panel, verdict);
      // The judge's short reason for a missing/absent/violated item: model text, shown as
      // text (el() builds text nodes). A week graded before the judge gave reasons has none.
      if (cell.why) {
        add(panel, el("p", { "class": "judge-reason" }, "Judge's reason: ", el("q", null, cell.why)));
      } else if (NEEDS_REASON[cell.v]) {
        add(panel, el("p", { "class": "judge-reason none" }, "Judge's reason: no reason recorded"));
      }
      if (cell.cq || cell.rejected) {
        add(panel, el("div", { "class": "claim rejected" },
          el("p", null, "The judge claimed " + (cell.cv || "a verdict") + " with this quote, which is not in the answer (rejected):"),
          el("blockquote", { "class": "claimed-quote" }, cell.cq || "")));
      }
    }
    if (run.answer === null || run.answer === undefined) {
      add(panel, el("p", { "class": "note" }, "No final answer: " + (run.answer_note || "not found")));
    } else {
      var quote = active && cell && !cell.rejected ? cell.q : null;
      var h = highlighted(run.answer, quote, "evidence");
      if (quote && !h.found) add(panel, el("p", { "class": "note" }, "The evidence quote is not found verbatim in this answer."));
      add(panel, h.node);
    }
    add(panel, trajectoryNode(run));
    return panel;
  }

  function partner(block, run) {
    // The other arm of the same rep: no-skill ↔ with-skill.
    var other = run.condition === "no-skill" ? "with-skill" : "no-skill";
    return block.columns.filter(function (c) { return c.condition === other && c.rep === run.rep; })[0] || null;
  }

  function showRun(block, detail, ci, item) {
    var run = block.columns[ci], cell = item ? item.cells[ci] : null;
    clear(detail);
    var other = partner(block, run);
    var pair = [run, other].filter(Boolean);
    pair.sort(function (a, b) { return a.condition === "no-skill" ? -1 : (b.condition === "no-skill" ? 1 : 0); });
    add(detail, el("div", { "class": "side-by-side" }, pair.map(function (r) {
      return answerPanel(r, item, r === run ? cell : null, r === run);
    })));
    detail.scrollIntoView({ block: "nearest" });
  }

  function promptNav(d) {
    // Previous / next prompt page (same folder), and the way back to the overview.
    return el("nav", { "class": "prompt-nav" },
      d.prev ? link(d.prev.href, "← " + d.prev.prompt) : el("span", { "class": "note" }, "first prompt"),
      " · ", link("../index.html", "overview"), " · ",
      d.next ? link(d.next.href, d.next.prompt + " →") : el("span", { "class": "note" }, "last prompt"));
  }
  function failing(item) {
    // An item some run missed (must) or violated (avoid).
    return (item.cells || []).some(function (c) {
      var v = c && (typeof c === "string" ? c : c.v);
      return (item.type === "must" && v === "missing") || (item.type === "avoid" && v === "violated");
    });
  }
  function promptPage(d) {
    SIMULATED = !!d.simulated;
    if (d.banner) app.appendChild(el("p", { "class": "banner" }, d.banner));
    app.appendChild(promptNav(d));
    app.appendChild(el("h1", null, d.prompt));
    var only = el("input", { type: "checkbox", id: "failures-only" });
    only.addEventListener("change", function () {
      document.body.classList.toggle("failures-only", only.checked);
    });
    app.appendChild(el("p", { "class": "filter" }, only,
      el("label", { "for": "failures-only" }, " failures only: the must items a run missed and the avoid items a run violated")));
    var top = section("Prompt", "prompt-text");
    if (d.family) add(top, kv([["skill family", d.family], ["week", d.week]]));
    add(top, d.text === null || d.text === undefined ? el("p", { "class": "note" }, d.text_note) : el("pre", { "class": "prompt-text" }, d.text));
    if ((d.lift || []).length) {
      add(top, table([col("model", "model"), col("no-skill", "must_no", f3, true),
        col("with-skill", "must_with", f3, true), col("lift", "must_lift", signed, true)], d.lift));
    }
    (d.models || []).forEach(function (block) {
      var s = section(block.model, "model-" + block.model.replace(/[^A-Za-z0-9_-]/g, "_"));
      s.setAttribute("data-model", block.model);
      var detail = el("div", { "class": "detail" });
      var grid = el("table", { "class": "grid" });
      var hr = el("tr", null, el("th", { scope: "col" }, "rubric item"));
      block.columns.forEach(function (c, ci) {
        var b = el("button", { type: "button", "class": "run-head" + (c.trigger_miss ? " miss" : ""), "data-col": ci },
          c.condition + " r" + c.rep);
        b.addEventListener("click", function () { showRun(block, detail, ci, null); });
        hr.appendChild(el("th", { scope: "col" }, b,
          c.trigger_miss ? el("span", { "class": "tag miss", title: "with-skill run that never read its skill" }, "trigger miss") : null,
          c.status && c.status !== "ok" ? el("span", { "class": "tag error" }, c.status) : null,
          c.invocation && c.condition !== "no-skill" ? el("span", { "class": "tag audit" }, c.invocation) : null));
      });
      grid.appendChild(el("thead", null, hr));
      var tb = el("tbody");
      block.items.forEach(function (item) {
        var tr = el("tr", { "data-item": item.type + "-" + item.index, "class": failing(item) ? "failing" : "passing" },
          el("th", { scope: "row", "class": "item" }, el("span", { "class": "type " + item.type }, item.type + "-" + item.index), " ", item.text));
        item.cells.forEach(function (cell, ci) {
          if (typeof cell === "string") { cell = { v: cell }; item.cells[ci] = cell; }
          if (!cell) { tr.appendChild(el("td", { "class": "empty" }, "—")); return; }
          var cls = "cell " + (cell.v === "ungraded" ? "ungraded" : (good(item.type, cell.v) ? "pos" : "neg"));
          if (item.type === "avoid" && cell.v === "violated") cls += " violation";
          if (cell.c) cls += " contested";
          if (cell.rejected) cls += " rejected";
          var b = el("button", { type: "button", "class": cls, "data-col": ci, "data-verdict": cell.v,
                                 title: cell.why ? "Judge's reason: " + cell.why : null },
            cell.v, cell.c ? " ⚑" : "", cell.rejected ? " ✗" : "");
          b.addEventListener("click", function () { showRun(block, detail, ci, item); });
          tr.appendChild(el("td", null, b));
        });
        tb.appendChild(tr);
      });
      grid.appendChild(tb);
      add(s, el("p", { "class": "note" }, "Click a verdict for that run's answer with the judge's quote marked, beside the other arm's answer of the same rep. ⚑ contested, ✗ quote rejected."));
      add(s, [el("div", { "class": "grid-wrap" }, grid), detail]);
    });
    app.appendChild(promptNav(d));
  }

  // ------------------------------------------------------------------ a Harbor task
  /* The verifier's tests × runs (no-skill and with-skill of each rep side by side), and per
   * run its reward, the files it made (text capped, binaries named with their size), the
   * verifier's output and its trajectory. Every name and content is text. */
  function bytes(n) { return isNum(n) ? (n >= 1024 ? (n / 1024).toFixed(1) + " KiB" : n + " B") : "n/a"; }
  function taskRunPanel(run) {
    var panel = el("div", { "class": "answer task-run", "data-run-id": run.run_id,
                            "data-condition": run.condition, "data-rep": run.rep });
    add(panel, el("h3", null, run.condition + " r" + run.rep));
    add(panel, kv([["reward", isNum(run.reward) ? String(run.reward) : "none"], ["status", run.status],
                   ["why", run.error], ["audit", run.invocation], ["run", run.run_id]]));
    var art = run.artifacts || { files: [], left_out: [] };
    var files = el("div", { "class": "artifacts" }, el("h4", null, "Files the agent made or changed (" + art.files.length + ")"));
    art.files.forEach(function (f) {
      var head = el("p", { "class": "artifact-head" }, el("code", { "class": "artifact-path" }, f.path), " ",
        el("span", { "class": "artifact-size" }, bytes(f.bytes)), f.binary ? el("span", { "class": "tag" }, "binary") : null);
      var item = el("div", { "class": "artifact", "data-path": f.path, "data-bytes": f.bytes, "data-binary": f.binary ? "1" : "0" }, head);
      if (!f.binary) {
        add(item, el("pre", { "class": "artifact-text" }, f.text));
        if (f.cut_bytes) add(item, el("p", { "class": "note" }, f.cut_bytes + " more bytes not shown"));
      }
      add(files, item);
    });
    (art.left_out || []).forEach(function (f) {
      add(files, el("p", { "class": "note left-out", "data-path": f.path }, "not shown: ", el("code", null, f.path), " — " + f.why));
    });
    add(panel, files);
    if ((run.rubric || []).length) {
      var rub = el("div", { "class": "task-rubric" }, el("h4", null, "Rubric (the judge, over the final message and these files)"));
      run.rubric.forEach(function (r) {
        add(rub, el("p", { "class": "rubric-verdict", "data-item": r.key, "data-verdict": r.verdict },
          el("span", { "class": "type " + r.type }, r.key), " ", el("b", null, r.verdict), " — ", r.text,
          r.evidence ? el("q", { "class": "evidence" + (r.evidence_ok ? "" : " rejected") }, r.evidence) : null,
          r.evidence && !r.evidence_ok ? el("span", { "class": "tag error" }, "quote not in what the judge saw") : null,
          // the judge's short reason, model text kept as text (as on a prompt's page)
          r.reason ? el("span", { "class": "judge-reason" }, " Judge's reason: ", el("q", null, r.reason))
            : NEEDS_REASON[r.verdict] ? el("span", { "class": "judge-reason none" }, " Judge's reason: no reason recorded") : null));
      });
      add(panel, rub);
    }
    var out = el("div", { "class": "verifier-output" }, el("h4", null, "Verifier output"));
    if (run.verifier_output === null || run.verifier_output === undefined) add(out, el("p", { "class": "note" }, "no verifier/output.txt"));
    else add(out, el("pre", { "class": "verifier-text" }, run.verifier_output));
    if (run.verifier_output_cut) add(out, el("p", { "class": "note" }, run.verifier_output_cut + " more bytes not shown"));
    add(panel, out);
    add(panel, trajectoryNode(run));
    return panel;
  }

  function taskPage(d) {
    app.appendChild(el("h1", null, d.prompt));
    var top = section("Instruction", "task-instruction");
    add(top, kv([["skill family", d.family], ["week", d.week]]));
    add(top, d.instruction === null || d.instruction === undefined ? el("p", { "class": "note" }, d.instruction_note)
      : el("pre", { "class": "prompt-text" }, d.instruction));
    if ((d.rewards || []).length) {
      add(top, table([col("model", "model"), col("no-skill", "reward_no", f3, true),
        col("with-skill", "reward_with", f3, true), col("Δ", "delta", signed, true), col("effect", "effect"),
        col("trials no", "trials_no", null, true), col("trials with", "trials_with", null, true)], d.rewards,
        { "class": "sortable", id: "task-rewards" }));
    }
    (d.models || []).forEach(function (block) {
      var s = section(block.model, "model-" + block.model.replace(/[^A-Za-z0-9_-]/g, "_"));
      s.setAttribute("data-model", block.model);
      var grid = el("table", { "class": "grid task-grid" });
      var hr = el("tr", null, el("th", { scope: "col" }, "verifier test"));
      block.columns.forEach(function (c, ci) {
        hr.appendChild(el("th", { scope: "col", "data-col": ci, "data-run-id": c.run_id },
          el("span", { "class": "run-head" }, c.condition + " r" + c.rep), " ",
          el("span", { "class": "reward", "data-reward": isNum(c.reward) ? c.reward : "" }, isNum(c.reward) ? "reward " + c.reward : "no reward"),
          c.status && c.status !== "ok" ? el("span", { "class": "tag error" }, c.status) : null));
      });
      grid.appendChild(el("thead", null, hr));
      var tb = el("tbody");
      block.tests.forEach(function (t) {
        var tr = el("tr", { "data-test": t.name }, el("th", { scope: "row", "class": "item" }, t.name));
        t.cells.forEach(function (v, ci) {
          if (!v) { tr.appendChild(el("td", { "class": "empty", "data-col": ci }, "—")); return; }
          tr.appendChild(el("td", { "class": "cell " + (v === "passed" ? "pos" : "neg"), "data-col": ci, "data-outcome": v }, v));
        });
        tb.appendChild(tr);
      });
      grid.appendChild(tb);
      add(s, el("div", { "class": "grid-wrap" }, grid));
      if ((block.rubric || []).length) {
        var rg = el("table", { "class": "grid task-rubric-grid" });
        var rh = el("tr", null, el("th", { scope: "col" }, "rubric item (judge)"));
        block.columns.forEach(function (c, ci) {
          rh.appendChild(el("th", { scope: "col", "data-col": ci }, c.condition + " r" + c.rep));
        });
        rg.appendChild(el("thead", null, rh));
        var rb = el("tbody");
        block.rubric.forEach(function (item) {
          var tr = el("tr", { "data-item": item.key }, el("th", { scope: "row", "class": "item" },
            el("span", { "class": "type " + item.type }, item.key), " ", item.text));
          item.cells.forEach(function (v, ci) {
            if (!v) { tr.appendChild(el("td", { "class": "empty", "data-col": ci }, "—")); return; }
            var cls = "cell " + (v === "ungraded" ? "ungraded" : (good(item.type, v) ? "pos" : "neg"));
            tr.appendChild(el("td", { "class": cls, "data-col": ci, "data-verdict": v }, v));
          });
          rb.appendChild(tr);
        });
        rg.appendChild(rb);
        add(s, el("div", { "class": "grid-wrap" }, rg));
      }
      var reps = [];
      block.columns.forEach(function (c) { if (reps.indexOf(c.rep) < 0) reps.push(c.rep); });
      reps.forEach(function (rep) {
        add(s, el("div", { "class": "side-by-side task-pair", "data-rep": rep },
          block.columns.filter(function (c) { return c.rep === rep; }).map(taskRunPanel)));
      });
    });
  }

  // ------------------------------------------------------------------ compare
  function comparePage(d) {
    app.appendChild(el("h1", null, "Week " + d.a_label + " → week " + d.b_label));
    add(app, el("p", { "class": "note" }, "skilllift compare: " + d.comparison + " (margin " + d.margin + ")"));
    var ms = section("Lift per model", "compare-models");
    add(ms, table([col("model", "model"), col(d.a_label, "lift_a", signed, true), col(d.b_label, "lift_b", signed, true),
      col("change", "delta", signed, true)], Object.keys(d.models || {}).map(function (m) {
        return Object.assign({ model: m }, d.models[m]);
      })));
    var ps = section("Per prompt", "compare-prompts");
    add(ps, table([
      col("prompt", "prompt"), col("model", "model"), col("change", "change"),
      col(d.a_label, "before", f3, true), col(d.b_label, "after", f3, true),
      { label: "pages", value: function (r) { return r.prompt; }, cell: function (r) {
        return [d.pages_a[r.prompt] ? link(d.pages_a[r.prompt], d.a_label) : null, " ",
                d.pages_b[r.prompt] ? link(d.pages_b[r.prompt], d.b_label) : null];
      } }], d.prompts || []));
  }

  // ------------------------------------------------------------------ labelling (served)
  function labelPage() {
    var state = { items: [], at: 0 };
    var head = el("p", { "class": "note" }, "Blind labelling: the model, the arm and the judge's verdict are hidden. " +
      "Each label is saved to labels.csv as you give it (the format skilllift judge-check reads).");
    var stats = el("div", { id: "agreement" });
    var card = el("div", { id: "label-item" });
    add(app, [el("h1", null, "Label a sample"), head, stats, card]);
    var params = new URLSearchParams(window.location.search);
    var q = params.get("run") ? "?run=" + encodeURIComponent(params.get("run")) : "";
    function showStats(a) {
      clear(stats);
      if (!a) return;
      add(stats, kv([["labelled", a.n], ["agreement", a.agreement === null ? "n/a" : f3(a.agreement)],
                     ["Cohen's kappa", a.kappa === null ? "undefined" : f3(a.kappa)], ["trust", a.state]]));
    }
    function show() {
      clear(card);
      var item = state.items[state.at];
      if (!item) { add(card, el("p", { id: "label-done" }, "All " + state.items.length + " items of this sample are labelled.")); return; }
      add(card, [el("p", { "class": "progress" }, "Item " + (state.at + 1) + " of " + state.items.length),
        el("h3", null, item.item_type + ": " + item.item_text),
        el("pre", { "class": "prompt-text" }, item.prompt_text || ""),
        el("pre", { "class": "answer-text" }, item.answer)]);
      var buttons = el("div", { "class": "choices" });
      item.choices.forEach(function (v) {
        var b = el("button", { type: "button", "class": "choice", "data-verdict": v }, v);
        b.addEventListener("click", function () { save(item, v); });
        buttons.appendChild(b);
      });
      add(card, buttons);
      if (item.label) add(card, el("p", { "class": "note" }, "already labelled: " + item.label));
    }
    function save(item, verdict) {
      fetch("/api/label", { method: "POST", headers: { "Content-Type": "application/json" },
                            body: JSON.stringify({ id: item.id, verdict: verdict }) })
        .then(function (r) { return r.json(); })
        .then(function (res) {
          if (res.error) { add(card, el("p", { "class": "error" }, res.error)); return; }
          item.label = verdict; state.at += 1; showStats(res.agreement); show();
        });
    }
    fetch("/api/sample" + q).then(function (r) { return r.json(); }).then(function (res) {
      if (res.error) { add(card, el("p", { "class": "error" }, res.error)); return; }
      state.items = res.items;
      state.at = 0;
      while (state.at < state.items.length && state.items[state.at].label) state.at += 1;
      showStats(res.agreement); show();
    });
  }

  var page = body.getAttribute("data-page");
  if (page === "overview") overview(DATA);
  else if (page === "prompt") promptPage(DATA);
  else if (page === "task") taskPage(DATA);
  else if (page === "compare") comparePage(DATA);
  else if (page === "prompts") { app.appendChild(el("h1", null, "Every prompt")); add(section("Prompts", "prompts"), promptsTable(DATA.prompts, DATA.pages, true)); }
  else if (page === "label") labelPage();
  body.setAttribute("data-ready", "1");
})();
