/* The compiled core's limits, codes and build hooks, shared by its C files: pdx_rules.c (chess rules),
 * pdx_encoding.c (input planes, policy indices), pdx_search.c (the PUCT forest) and pdx_core.c (the games'
 * entry points). pdx_core_limits reports the limits; chesscore/boundary.py holds the same values and
 * native_core.py refuses a build whose limits differ.
 *
 * The move cap: a root passes valid_root only with one king and at most MAX_MEN men a side (no two
 * pieces on a square), and play never adds men, so a position has at most 10 + 15 * 27 = 415
 * pseudo-legal moves (a king's 8 steps and 2 castlings; any other man at most a queen's 27: a rook
 * 14, a bishop 13, a knight 8, a pawn 12 = 3 squares x 4 promotions). MAX_MOVES is above that; every
 * buffer of one position's moves holds MAX_MOVES (positions reachable from the start have at most 218).
 * The clocks: a root's fullmove number is at most MAX_FULLMOVE and its halfmove clock at most
 * MAX_HALFMOVE, and a game holds at most WINDOW positions between captures and pawn moves (at most
 * 16 * 6 pawn moves + 30 captures), so ply() and the clocks stay far inside an int.
 */
#ifndef PDX_LIMITS_H
#define PDX_LIMITS_H

#define PDX_ABI 4           /* bumped when an entry point or a limit changes (native_core.py checks it) */
#define MAX_MEN 16
#define MAX_MOVES 416       /* the move cap: > 415, the most pseudo-legal moves of a position (above) */
#define LEGAL_STRIDE MAX_MOVES  /* columns of a row of legal policy indices or their logits */
#define HIST 8
#define WINDOW 200          /* positions since the last irreversible move (the 75-move rule ends at 151) */
#define POLICY 4288
#define MAX_FULLMOVE 1000000
#define MAX_HALFMOVE 1000000

/* a C99 static assertion: the move buffers hold the bound proven above */
typedef char max_moves_holds_the_bound[(MAX_MOVES > 10 + (MAX_MEN - 1) * 27) ? 1 : -1];

/* the codes of failing calls (native_core.py maps each to a named exception) */
enum { PDX_OK = 0, PDX_E_ILLEGAL = -1, PDX_E_WINDOW = -2, PDX_E_NOMEM = -3, PDX_E_BOARD = -4, PDX_E_INDEX = -5,
       PDX_E_STATE = -6 };

/* shared between the core's C files, not exported from the library (only pdx_* entry points are) */
#define PDX_INTERNAL __attribute__((visibility("hidden")))

/* fault injection for the tests (a build with -DPDX_FAULTS only): the next n allocations fail */
#ifdef PDX_FAULTS
PDX_INTERNAL extern int pdx_fail_allocs;
#define ALLOC_FAILS() (pdx_fail_allocs > 0 && pdx_fail_allocs-- > 0)
#else
#define ALLOC_FAILS() 0
#endif

#endif
