'use strict';
// ctorch's failures as JS errors (the runtime's index.js wires it): each
// failing status becomes a CtorchError carrying the library's message.
module.exports = function makeErrors(F, capi) {
  const E = capi.ENUMS;
  // ---- errors: tickets (koffi's async calls run on worker threads) ----------
  // With tickets on, a failing call's status carries a ticket that names its
  // message in ctorch's failure log: the message is reachable from the JS
  // thread whichever thread made the call.
  const STATUS_NAMES = Object.fromEntries(Object.entries(E.ctorch_status).map(([k, v]) => [v, k]));
  let msgBuf = Buffer.alloc(512);
  const msgLen = new BigUint64Array(1);
  const msgStatus = new Int32Array(1);
  // The status macros as data (api.json's macros[].bits).
  const bitsOf = (b) => (st) => ((st >>> 0) >>> b.shift) & b.mask;
  const statusCode = bitsOf(capi.STATUS_BITS.CTORCH_STATUS_CODE);
  const statusTicket = bitsOf(capi.STATUS_BITS.CTORCH_STATUS_TICKET);
  class CtorchError extends Error {
    constructor(status, message) {
      super(`${STATUS_NAMES[status] || 'CTORCH_?'}: ${message}`);
      this.name = 'CtorchError';
      this.status = status;
      this.statusName = STATUS_NAMES[status] || 'CTORCH_?';
    }
  }

  function errorOf(st) {
    const code = statusCode(st);
    const ticket = statusTicket(st);
    let msg = '(no message)';
    const plus = capi.BUFFER_SIZES.ctorch_error_message.buf.plus;
    while (ticket && F.ctorch_error_message(msgStatus, msgLen, msgBuf, msgBuf.length, ticket) === 0) {
      const need = Number(msgLen[0]) + plus;
      if (need > msgBuf.length) { msgBuf = Buffer.alloc(need); continue; } // truncated: again, as large as reported
      msg = msgBuf.toString('utf8', 0, Number(msgLen[0]));
      break;
    }
    return new CtorchError(code, msg);
  }

  function fail(st) { throw errorOf(st); }
  function check(st) { if (st !== 0) throw errorOf(st); }

  return { CtorchError, errorOf, fail, check };
};
