'use strict';
// printf's "%.<d>f" for the examples' output lines, which the tests compare
// with the C programs' character for character. Number.prototype.toFixed
// rounds the double's exact value too, but breaks an exact tie upwards where
// glibc's printf takes the even digit (21.125 -> "21.13" against "21.12").
// x is a tie at d decimals exactly when x * 2^(d+1) is an odd integer.
/** @param {number} x @param {number} d @returns {string} */
function fixed(x, d) {
  const c = x * 2 ** (d + 1); // exact: a power of two
  if (Number.isInteger(c) && Math.abs(c % 2) === 1) {
    let q = Math.floor(x * 10 ** d); // x * 10^d = q + 0.5
    if (q % 2 !== 0) q += 1;
    return (q / 10 ** d).toFixed(d);
  }
  return x.toFixed(d);
}
module.exports = { fixed };
