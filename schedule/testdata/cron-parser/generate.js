// generate.js writes golden.json: the next ticks of cron expressions with
// names of months and days of week, as the npm package cron-parser
// computes them, which TestNamesMatchCronParser compares with the
// schedule package's own. The Go test needs no node.
//
// golden.json was made with cron-parser 5.10.7 (and its luxon 3.7.2) on
// node v20.20.2; the file records the versions. To regenerate, from the
// repository's root:
//
//	dir=$(mktemp -d) && (cd "$dir" && npm init -y >/dev/null && npm install cron-parser@5.10.7)
//	(cd "$dir" && node "$OLDPWD/schedule/testdata/cron-parser/generate.js") > schedule/testdata/cron-parser/golden.json
//
// It loads cron-parser from the directory it runs in.
'use strict';

const { createRequire } = require('module');
const here = createRequire(process.cwd() + '/');
const { CronExpressionParser } = here('cron-parser');
const version = (name) => {
  const fs = require('fs');
  const path = require('path');
  let dir = path.dirname(here.resolve(name));
  while (!fs.existsSync(path.join(dir, 'package.json')) || JSON.parse(fs.readFileSync(path.join(dir, 'package.json'))).name !== name) {
    dir = path.dirname(dir);
  }
  return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'))).version;
};

const months = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const days = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const title = (n) => n[0] + n.slice(1).toLowerCase();

// same: expressions both engines read alike. Both take five fields
// (minute first) or six (seconds first), names in any case, ranges of a
// name and a number, steps over "*" and over ranges; both join the day
// fields with OR only when both are restricted, and no expression here
// has a day field of "*/1", which the two read differently.
const same = [];
for (const [i, m] of months.entries()) {
  same.push(`0 0 1 ${m} *`, `0 0 1 ${m.toLowerCase()} *`, `0 0 1 ${title(m)} *`);
  same.push(`0 0 1 JAN-${m} *`, `0 0 1 ${m}-DEC *`, `0 0 1 ${m},${months[(i + 6) % 12]} *`);
  same.push(`0 0 1 ${m}-DEC/2 *`, `0 0 1 ${i + 1}-${m} *`, `0 0 1 ${m}-12 *`);
}
for (const [i, d] of days.entries()) {
  same.push(`30 12 * * ${d}`, `30 12 * * ${d.toLowerCase()}`, `30 12 * * ${title(d)}`);
  same.push(`30 12 * * SUN-${d}`, `30 12 * * ${d}-SAT`, `30 12 * * ${d},${days[(i + 3) % 7]}`);
  same.push(`30 12 * * ${d}-SAT/2`, `30 12 * * ${i}-${d}`, `30 12 * * ${d}-7`, `30 12 * * ${d}-6`);
}
same.push(
  // lists, ranges and steps together
  `0 0 1 ${months.join(',')} *`, `0 0 1 ${months.join(',').toLowerCase()} *`, `0 0 1 JAN,JUL *`,
  '0 0 1 jan,Jul,DEC *', '0 0 1 JUL,1,dec *', '0 0 1 MAR-JUL *', '0 0 1 JUL-SEP *', '0 0 1 jan-Jul *',
  '0 0 1 JAN-MAR,JUL-SEP *', '0 0 1 JAN-MAR,JUL-SEP/2 *', '0 0 1 JAN-FEB,JUL-AUG/7 *',
  '0 0 1 JAN-DEC/2 *', '0 0 1 JAN-DEC/3 *', '0 0 1 JAN-Dec/5 *', '0 0 1 FEB-NOV/4 *', '0 0 1 JUL-DEC/7 *',
  '0 0 1 JAN-DEC/12 *', '0 0 1 1-JUL/2 *', '0 0 1 */2 *', '0 0 1 */3 *', '0 0 1 */5 *', '0 0 1 */12 *',
  `30 12 * * ${days.join(',')}`, '30 12 * * SUN,WED,sat', '30 12 * * WED,5', '30 12 * * MON-FRI',
  '30 12 * * TUE-THU', '30 12 * * mon-fri', '30 12 * * Wed-Fri', '30 12 * * MON-WED,FRI', '30 12 * * SUN-TUE,THU-SAT',
  '30 12 * * SUN-SAT/2', '30 12 * * MON-FRI/2', '30 12 * * TUE-SAT/3', '30 12 * * MON-FRI/7', '30 12 * * */2',
  '30 12 * * */3', '30 12 * * */7', '30 12 * * 0-7/2', '30 12 * * SUN-7', '30 12 * * 1-FRI', '30 12 * * MON-5',
  // month and day of week names together; both day fields restricted
  '0 9 * JUL WED', '0 9 * JAN-MAR MON-FRI', '0 9 * jul,dec sat,sun', '0 0 13 JUL FRI', '0 0 1,15 * WED',
  '0 0 */2 JUL MON',
  // with seconds
  '30 0 0 1 JUL *', '0 30 9 * * WED', '*/20 0 9 * JUL-AUG MON-FRI',
  // refused by both: a name that is none, a name in a field without
  // names or of the other field, ranges backwards or out of bounds,
  // steps that are names or 0, empty parts
  '0 0 1 JUK *', '0 0 1 JULY *', '0 0 1 JULL *', '0 0 1 J *', '0 0 1 JA *', '0 0 * * MONDAY',
  '0 0 * * WEDS', '0 0 * * TUES', '0 0 * MON *', '0 0 * * JAN', '0 0 JUL * *', 'JUL 0 1 * *',
  '0 0 1 DEC-JAN *', '0 0 * * FRI-MON', '0 0 * * 7-MON', '0 0 * JAN-13 *', '0 0 1 0-JUL *',
  '0 0 * * SUN-8', '0 0 1 */JAN *', '0 0 1 JAN-DEC/JUL *', '0 0 1 JAN-DEC/0 *', '0 0 1 JAN,,JUL *',
  '0 0 1 JAN- *', '0 0 1 -JUL *', '0 0 1 L *',
);

// differ: expressions the two read apart, each for a reason
// docs/scheduling.md gives; the Go test states what the schedule
// package does with each.
const differ = [
  ['0 0 * * MON-SUN', 'SUN ending a range is 7 here; cron-parser reads it as 0, a range backwards'],
  ['0 0 * * SAT-SUN', 'SUN ending a range is 7 here; cron-parser reads it as 0, a range backwards'],
  ['0 0 * * fri-sun/2', 'SUN ending a range is 7 here; cron-parser reads it as 0, a range backwards'],
  ['0 0 1 JUL/2 *', 'a step needs * or a range before it here; cron-parser reads JUL/2 as JUL-DEC/2'],
  ['0 0 * * TUE/2', 'a step needs * or a range before it here; cron-parser reads TUE/2 as TUE-7/2'],
  ['0 0 1 */13 *', 'a step above the highest value is refused here; cron-parser keeps the first value'],
  ['0 0 * * */8', 'a step above the highest value is refused here; cron-parser keeps the first value'],
  ['0 0 1 JUL,jul *', 'a value given twice is taken here; cron-parser refuses it'],
  ['0 0 * * SUN,7', 'a value given twice is taken here; cron-parser refuses it'],
  ['0 0 13 JUL */1', 'a day field of */1 is * here; cron-parser reads it as restricted'],
  ['0 0 * * FRIL', 'the Quartz forms are refused here'],
  ['0 0 * * MON#2', 'the Quartz forms are refused here'],
  ['0 0 ? JUL WED', 'the Quartz forms are refused here'],
];

const starts = ['2026-01-01T00:00:00Z', '2027-07-01T00:00:00Z', '2028-02-29T13:45:30Z'];
const ticks = 4;

function run(spec) {
  try {
    return {
      next: starts.map((start) => CronExpressionParser.parse(spec, { currentDate: start, tz: 'UTC' })
        .take(ticks).map((d) => d.toISOString().replace('.000Z', 'Z'))),
    };
  } catch (err) {
    return { error: err.message };
  }
}

const lines = [];
const seen = new Set();
for (const spec of same) {
  if (!seen.has(spec)) {
    seen.add(spec);
    lines.push(JSON.stringify({ spec, ...run(spec) }));
  }
}
for (const [spec, differs] of differ) {
  lines.push(JSON.stringify({ spec, differs, ...run(spec) }));
}
const head = {
  made_by: `cron-parser ${version('cron-parser')} (luxon ${version('luxon')}) on node ${process.version}, by generate.js beside this file`,
  starts,
  ticks,
};
process.stdout.write(JSON.stringify(head).slice(0, -1) + ',"cases":[\n' + lines.join(',\n') + '\n]}\n');
