// Opens a notebook in a running JupyterLab with Debian's Chromium (headless, driven by
// playwright-core), runs all its cells from the Run menu, waits until every code cell has run and
// the expected number of PNG images is on the page, saves the notebook, takes a screenshot.
//
//   node run_notebook.mjs --url http://127.0.0.1:PORT --token T --notebook PATH --cells N
//        --kernel 'KERNEL DISPLAY NAME' --screenshot FILE.png [--images N] [--timeout SECONDS]
//
// Prints one JSON line on stdout: {"ok", "cells", "executed", "images": [{width, height}],
// "stderr": [text], "screenshot", "seconds"}; exits 0 when the notebook ran to the end and the
// images are there, 1 otherwise (with "reason"). It never downloads a browser: it needs
// /usr/bin/chromium (install/browser.sh installs it).

import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function parseArgs(argv) {
  const args = { images: '1', timeout: '400' };
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || argv[i + 1] === undefined) {
      throw new Error(`bad argument ${argv[i]}`);
    }
    args[argv[i].slice(2)] = argv[i + 1];
  }
  for (const need of ['url', 'token', 'notebook', 'screenshot', 'cells', 'kernel']) {
    if (!args[need]) throw new Error(`missing --${need}`);
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));
const wantImages = Number(args.images);
const wantCells = Number(args.cells);
const deadline = Date.now() + Number(args.timeout) * 1000;
const left = () => Math.max(1000, deadline - Date.now());
const started = Date.now();
const profile = mkdtempSync(join(tmpdir(), 'nbcuda-chromium-'));
const result = { ok: false, screenshot: args.screenshot };

// Answers JupyterLab's "Select Kernel" dialog, if it is open, with the kernel named args.kernel.
async function answerKernelDialog(page) {
  const dialog = page.locator('.jp-Dialog', { hasText: 'Select Kernel' });
  if ((await dialog.count()) === 0) return;
  const select = dialog.locator('select');
  const labels = await select.locator('option').allTextContents();
  const label = labels.find((l) => l.includes(args.kernel));
  if (!label) throw new Error(`the Select Kernel dialog offers no ${args.kernel}: ${labels}`);
  await select.selectOption({ label });
  await dialog.locator('button', { hasText: /^Select$/ }).click();
  result.kernelDialog = (result.kernelDialog ?? 0) + 1;
}

// Output areas of code cells that hold an image, and their sizes.
const IMAGES = '.jp-CodeCell .jp-OutputArea-output img[src^="data:image/png"]';

let context;
try {
  // A persistent context on a fresh profile directory: playwright passes it as --user-data-dir.
  context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1500, height: 1100 },
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  const page = context.pages()[0] ?? await context.newPage();
  const url = `${args.url}/lab/tree/${args.notebook}?token=${encodeURIComponent(args.token)}`;
  await page.goto(url, { timeout: left() });

  // The notebook is open with all its code cells, its Jupyter kernel (the notebook's own kernelspec)
  // is connected and idle. JupyterLab may ask for a kernel while the kernelspecs are loading: the
  // dialog is answered with the notebook's kernel.
  await page.locator('.jp-Notebook .jp-Cell').first().waitFor({ timeout: left() });
  for (;;) {
    await answerKernelDialog(page);
    const st = await page.evaluate((display) => ({
      cells: document.querySelectorAll('.jp-Notebook .jp-CodeCell').length,
      kernel: [...document.querySelectorAll('.jp-NotebookPanel-toolbar, #jp-main-statusbar')]
        .some((e) => e.textContent.includes(display)),
      idle: document.querySelector('.jp-Notebook-ExecutionIndicator[data-status="idle"]') !== null,
      dialog: document.querySelector('.jp-Dialog') !== null,
    }), args.kernel);
    if (st.cells === wantCells && st.kernel && st.idle && !st.dialog) break;
    if (Date.now() > deadline) throw new Error(`the notebook did not get ready: ${JSON.stringify(st)}`);
    await page.waitForTimeout(500);
  }
  result.cells = wantCells;

  // Run → Run All Cells.
  await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Run$/ }).click({ timeout: left() });
  await page.locator('.lm-Menu-itemLabel', { hasText: /^Run All Cells$/ }).click({ timeout: left() });

  // Done when every code cell shows an execution count and the Jupyter kernel is idle. JupyterLab
  // stops a Run All at the first error: idle for 15 s with cells left unrun means it stopped.
  let idleSince = null;
  for (;;) {
    const st = await page.evaluate(() => {
      const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')];
      return {
        total: prompts.length,
        ran: prompts.filter((p) => /\[\d+\]/.test(p.textContent)).length,
        idle: document.querySelector('.jp-Notebook-ExecutionIndicator[data-status="idle"]') !== null,
      };
    });
    if (st.total > 0 && st.ran === st.total && st.idle) break;
    if (st.idle && st.ran < st.total) {
      await answerKernelDialog(page);
      idleSince = idleSince ?? Date.now();
      if (Date.now() - idleSince > 15000) {
        throw new Error(`the run stopped after ${st.ran} of ${st.total} code cells (an error output?)`);
      }
    } else {
      idleSince = null;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out with ${st.ran} of ${st.total} code cells run`);
    }
    await page.waitForTimeout(500);
  }
  result.executed = await page.locator('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')
    .filter({ hasText: /\[\d+\]/ }).count();

  // Text of stderr-style outputs (stderr streams and errors); the caller judges them from the
  // saved notebook, where errors and streams are told apart.
  result.stderr = await page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    .evaluateAll((els) => els.map((e) => e.textContent.slice(0, 500)));

  // The images, decoded (naturalWidth > 0), scrolled into view for the screenshot.
  await page.waitForFunction(([sel, n]) => {
    const imgs = [...document.querySelectorAll(sel)];
    return imgs.filter((i) => i.complete && i.naturalWidth > 0).length >= n;
  }, [IMAGES, wantImages], { timeout: left(), polling: 500 });
  result.images = await page.locator(IMAGES).evaluateAll((els) => els.map((i) => ({
    width: i.naturalWidth, height: i.naturalHeight,
  })));
  await page.locator(IMAGES).first().scrollIntoViewIfNeeded({ timeout: left() });

  // Save (Ctrl+S) so the caller can read the executed notebook from disk.
  await page.locator('.jp-Notebook').first().click({ position: { x: 5, y: 5 } });
  await page.keyboard.press('Control+s');
  await page.waitForTimeout(1500);
  await page.screenshot({ path: args.screenshot });
  result.ok = true;
} catch (e) {
  result.reason = String(e && e.message ? e.message : e).split('\n').slice(0, 6).join(' | ');
  try {
    const pages = context ? context.pages() : [];
    if (pages.length > 0) {
      result.stderr = await pages[0]
        .locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
        .evaluateAll((els) => els.map((el) => el.textContent.slice(0, 500)));
      await pages[0].screenshot({ path: args.screenshot });
    }
  } catch {
    // no screenshot: the browser is gone
  }
} finally {
  if (context) await context.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
}
result.seconds = Math.round((Date.now() - started) / 100) / 10;
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
