// SPDX-License-Identifier: BSD-2-Clause
/* opcodes.h - the one list of bytecodes, included wherever a table of them is needed.
 *
 * OPCODE(name, operand bytes, stack effect, operand format). Operands are little-endian
 * u8/u16. "site" is an index into the method's send sites (selector, arity, inline
 * cache); "lit" into its literals; "blk" into its nested block methods; "slot" is a
 * frame slot, an argument or a frame local, as a signed byte: the Value at that
 * offset from the frame (arguments lie just below the frame header, locals after it).
 * The format (OPF_ in method.h) is how the disassembler prints the operands. */

/* push self / nil / true / false / the small integers 0 and 1:  -> v */
OPCODE(PUSH_SELF, 0, 1, NONE)
OPCODE(PUSH_NIL, 0, 1, NONE)
OPCODE(PUSH_TRUE, 0, 1, NONE)
OPCODE(PUSH_FALSE, 0, 1, NONE)
OPCODE(PUSH_0, 0, 1, NONE)
OPCODE(PUSH_1, 0, 1, NONE)
/* PUSH_INT8 i8: push a small integer in -128..127:  -> v */
OPCODE(PUSH_INT8, 1, 1, INT8)
/* PUSH_LIT lit16: push a literal:  -> v */
OPCODE(PUSH_LIT, 2, 1, LIT)
/* PUSH_ARG i8 / POP_ARG i8: argument i (0 is the receiver):  -> v  /  v ->
 * Arguments live in the activation's own part of the caller's stack, so SOM's
 * assignment to an argument is a plain store. */
OPCODE(PUSH_ARG, 1, 1, INDEX)
OPCODE(POP_ARG, 1, -1, INDEX)
/* PUSH_LOCAL i8 / POP_LOCAL i8: a frame local:  -> v  /  v -> */
OPCODE(PUSH_LOCAL, 1, 1, INDEX)
OPCODE(POP_LOCAL, 1, -1, INDEX)
/* PUSH_FIELD i8 / POP_FIELD i8: a field of self:  -> v  /  v -> */
OPCODE(PUSH_FIELD, 1, 1, INDEX)
OPCODE(POP_FIELD, 1, -1, INDEX)
/* PUSH_CTX depth8 i8 / POP_CTX depth8 i8: a captured variable, depth contexts out */
OPCODE(PUSH_CTX, 2, 1, CTX)
OPCODE(POP_CTX, 2, -1, CTX)
/* PUSH_GLOBAL lit16: a global, by name (undefined: sends unknownGlobal: to self):  -> v */
OPCODE(PUSH_GLOBAL, 2, 1, GLOBAL)
/* PUSH_BLOCK blk8: make a closure of nested block method blk:  -> block */
OPCODE(PUSH_BLOCK, 1, 1, INDEX)
/* POP: v ->    DUP: v -> v v */
OPCODE(POP, 0, -1, NONE)
OPCODE(DUP, 0, 1, NONE)
/* SEND site16: rcvr args -> result.  SUPER_SEND site16: lookup starts in the holder's superclass */
OPCODE(SEND, 2, 0, SITE)
OPCODE(SUPER_SEND, 2, 0, SITE)
/* SEND_S slot8 site16: push a frame slot (the last argument, or the receiver of a unary
 * send), then SEND: PUSH_ARG or PUSH_LOCAL and SEND in one dispatch */
OPCODE(SEND_S, 3, 1, SLOT_SITE)
/* Sends with small-integer fast paths; the site is used when the fast path misses:
 * rcvr arg -> result */
OPCODE(SEND_ADD, 2, -1, SITE)
OPCODE(SEND_SUB, 2, -1, SITE)
OPCODE(SEND_MUL, 2, -1, SITE)
OPCODE(SEND_LT, 2, -1, SITE)
OPCODE(SEND_GT, 2, -1, SITE)
OPCODE(SEND_LE, 2, -1, SITE)
OPCODE(SEND_GE, 2, -1, SITE)
OPCODE(SEND_EQ, 2, -1, SITE)
OPCODE(SEND_NE, 2, -1, SITE)
OPCODE(SEND_MOD, 2, -1, SITE)
OPCODE(SEND_DIV, 2, -1, SITE)
OPCODE(SEND_BITAND, 2, -1, SITE)
/* Double-only special sends: // on two immediate Doubles (rcvr arg -> quotient), sqrt
 * of an immediate Double (rcvr -> root); anything else is the site's send */
OPCODE(SEND_FDIV, 2, -1, SITE)
OPCODE(SEND_SQRT, 2, 0, SITE)
/* SEND_AND / SEND_OR site16: && and || with an argument that is not a literal
 * block; two Booleans without a send:  rcvr arg -> result */
OPCODE(SEND_AND, 2, -1, SITE)
OPCODE(SEND_OR, 2, -1, SITE)
/* SEND_AT site16: rcvr index -> elem (Array fast path);  SEND_ATPUT: rcvr index v -> rcvr */
OPCODE(SEND_AT, 2, -1, SITE)
OPCODE(SEND_ATPUT, 2, -2, SITE)
/* The arithmetic and comparison sends with their operands not (all) on the stack,
 * so that "x + 1" or "a < b" on frame locals is one dispatch. The operand bytes
 * come before the site: a miss pushes the operands and sends, with ip at the site.
 *   _L  slot8 site16: rcvr (stack) op slot  -> result
 *   _LL slot8 slot8 site16: slot op slot  -> result
 *   _I  int8 site16: rcvr (stack) op small integer  -> result
 *   _LI slot8 int8 site16: slot op small integer  -> result
 * Each plain opcode's four shapes follow one another, in the order of the plain
 * opcodes above (the compiler computes a shape from its plain opcode). */
OPCODE(SEND_ADD_L, 3, 0, SLOT_SITE)
OPCODE(SEND_ADD_LL, 4, 1, SLOT2_SITE)
OPCODE(SEND_ADD_I, 3, 0, INT8_SITE)
OPCODE(SEND_ADD_LI, 4, 1, SLOT_INT8_SITE)
OPCODE(SEND_SUB_L, 3, 0, SLOT_SITE)
OPCODE(SEND_SUB_LL, 4, 1, SLOT2_SITE)
OPCODE(SEND_SUB_I, 3, 0, INT8_SITE)
OPCODE(SEND_SUB_LI, 4, 1, SLOT_INT8_SITE)
OPCODE(SEND_MUL_L, 3, 0, SLOT_SITE)
OPCODE(SEND_MUL_LL, 4, 1, SLOT2_SITE)
OPCODE(SEND_MUL_I, 3, 0, INT8_SITE)
OPCODE(SEND_MUL_LI, 4, 1, SLOT_INT8_SITE)
OPCODE(SEND_LT_L, 3, 0, SLOT_SITE)
OPCODE(SEND_LT_LL, 4, 1, SLOT2_SITE)
OPCODE(SEND_LT_I, 3, 0, INT8_SITE)
OPCODE(SEND_LT_LI, 4, 1, SLOT_INT8_SITE)
OPCODE(SEND_GT_L, 3, 0, SLOT_SITE)
OPCODE(SEND_GT_LL, 4, 1, SLOT2_SITE)
OPCODE(SEND_GT_I, 3, 0, INT8_SITE)
OPCODE(SEND_GT_LI, 4, 1, SLOT_INT8_SITE)
OPCODE(SEND_LE_L, 3, 0, SLOT_SITE)
OPCODE(SEND_LE_LL, 4, 1, SLOT2_SITE)
OPCODE(SEND_LE_I, 3, 0, INT8_SITE)
OPCODE(SEND_LE_LI, 4, 1, SLOT_INT8_SITE)
OPCODE(SEND_GE_L, 3, 0, SLOT_SITE)
OPCODE(SEND_GE_LL, 4, 1, SLOT2_SITE)
OPCODE(SEND_GE_I, 3, 0, INT8_SITE)
OPCODE(SEND_GE_LI, 4, 1, SLOT_INT8_SITE)
OPCODE(SEND_EQ_L, 3, 0, SLOT_SITE)
OPCODE(SEND_EQ_LL, 4, 1, SLOT2_SITE)
OPCODE(SEND_EQ_I, 3, 0, INT8_SITE)
OPCODE(SEND_EQ_LI, 4, 1, SLOT_INT8_SITE)
OPCODE(SEND_NE_L, 3, 0, SLOT_SITE)
OPCODE(SEND_NE_LL, 4, 1, SLOT2_SITE)
OPCODE(SEND_NE_I, 3, 0, INT8_SITE)
OPCODE(SEND_NE_LI, 4, 1, SLOT_INT8_SITE)
/* IDENTICAL: a b -> (a == b), never a real send */
OPCODE(IDENTICAL, 0, -1, NONE)
/* JUMP off16 forward; JUMP_BACK off16 backward (a safe point) */
OPCODE(JUMP, 2, 0, JUMP)
OPCODE(JUMP_BACK, 2, 0, JUMP_BACK)
/* JUMP_IF_TRUE / JUMP_IF_FALSE off16: pop the condition (must be a Boolean) */
OPCODE(JUMP_IF_TRUE, 2, -1, JUMP)
OPCODE(JUMP_IF_FALSE, 2, -1, JUMP)
/* JUMP_IF_NIL / JUMP_IF_NOT_NIL off16: pop a value; jump if it is (is not) nil
 * (the inlined ifNil: family) */
OPCODE(JUMP_IF_NIL, 2, -1, JUMP)
OPCODE(JUMP_IF_NOT_NIL, 2, -1, JUMP)
/* JUMP_BACK_IF_TRUE / JUMP_BACK_IF_FALSE off16: pop the condition (a Boolean); jump
 * backward off16 if it is true (false), a safe point. The test at the bottom of an
 * inlined whileTrue: (whileFalse:) loop, which so needs no JUMP_BACK each iteration. */
OPCODE(JUMP_BACK_IF_TRUE, 2, -1, JUMP_BACK)
OPCODE(JUMP_BACK_IF_FALSE, 2, -1, JUMP_BACK)
/* FOR_NEXT i8 limit8 off16: local i := i + 1; if i <= local limit, jump back off16 (a safe
 * point). The step and test of an inlined to:do: or timesRepeat: loop in one dispatch. */
OPCODE(FOR_NEXT, 4, 0, FOR)
/* FOR_PREV i8 limit8 off16: local i := i - 1; if i >= local limit, jump back off16 (a safe
 * point). The same for an inlined downTo:do:. */
OPCODE(FOR_PREV, 4, 0, FOR)
/* RETURN_LOCAL: v -> (return v from this activation to its caller) */
OPCODE(RETURN_LOCAL, 0, -1, NONE)
/* RETURN_SELF: return the receiver from a method */
OPCODE(RETURN_SELF, 0, 0, NONE)
/* RETURN_NONLOCAL: v -> (return v from the block's home method) */
OPCODE(RETURN_NONLOCAL, 0, -1, NONE)
