/* pdx_core: the self-play chess side in C (python-chess stays the oracle; tests compare the two), and
 * here the entry points of its games. The rules are pdx_rules.c, the encoding pdx_encoding.c, the
 * search pdx_search.c (its own entry points, pdx_forest_*); pdx_limits.h holds their shared limits.
 *
 * Holds N games and, in one call per batch, plays policy-slot moves, generates the next legal
 * moves, decides game ends (the rules of pdx_lightning.chesscore.rules, in its order), writes Lc0's
 * 112 input planes (chesscore.encoding) and the legal masks and sorted legal policy indices
 * (chesscore.moves) into caller-owned buffers. Loaded with ctypes (chesscore/native_core.py); every
 * entry point touches only the games it is given, so threads may run disjoint games at once
 * (ctypes releases the GIL during a call).
 *
 * Inputs are checked twice: chesscore/boundary.py validates every board, index and buffer before
 * a call, and the core checks again what its memory safety rests on (game indices, and in
 * pdx_core_set the root's structure: valid_root), answering with a PDX_E_* code, never writing out
 * of bounds. Every entry point that can fail returns 0 or a PDX_E_* code (the counting ones a count
 * or a code); a batch call names its failing row in *where, and a failed pdx_core_play changed no
 * game (all rows are checked before any is played).
 */
#include <stdlib.h>
#include <string.h>

#include "pdx_encoding.h"
#include "pdx_limits.h"
#include "pdx_rules.h"

#ifdef PDX_FAULTS
int pdx_fail_allocs = 0;
void pdx_fault_fail_allocs(int n) { pdx_fail_allocs = n; }
#endif

/* the core's ABI version and limits: abi, MAX_MOVES, LEGAL_STRIDE, WINDOW, MAX_FULLMOVE, MAX_HALFMOVE */
void pdx_core_limits(int32_t *out) {
    out[0] = PDX_ABI; out[1] = MAX_MOVES; out[2] = LEGAL_STRIDE; out[3] = WINDOW;
    out[4] = MAX_FULLMOVE; out[5] = MAX_HALFMOVE;
}

/* PDX_E_INDEX with *where = the first row whose game index is out of range, else 0 */
static int check_games(const Core *c, int n, const int32_t *games, int32_t *where) {
    for (int r = 0; r < n; r++)
        if (bad_game(c, games[r])) { *where = r; return PDX_E_INDEX; }
    return PDX_OK;
}

Core *pdx_core_new(int n) {
    pdx_init();
    if (n < 1 || ALLOC_FAILS()) return NULL;
    Core *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n = n;
    c->g = calloc((size_t)n, sizeof *c->g);
    if (!c->g) { free(c); return NULL; }
    for (int i = 0; i < n; i++) setup(&c->g[i], &START);
    return c;
}

void pdx_core_free(Core *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) free(c->g[i].moves);
    free(c->g);
    free(c);
}

int pdx_core_reset(Core *c, int i) { return bad_game(c, i) ? PDX_E_INDEX : setup(&c->g[i], &START); }

/* an arbitrary root: 12 bitboards (White P..K, Black P..K), side to move, castling rook squares
   (clean), python-chess's ep square or -1, the clocks; PDX_E_BOARD (game i unchanged) unless
   valid_root */
int pdx_core_set(Core *c, int i, const uint64_t *bb12, int turn, uint64_t castling, int ep, int halfmove,
                 int fullmove) {
    if (bad_game(c, i)) return PDX_E_INDEX;
    Pos p;
    memset(&p, 0, sizeof p);
    for (int col = 0; col < 2; col++)
        for (int t = 0; t < 6; t++) { p.bb[col][t] = bb12[col * 6 + t]; p.occ[col] |= bb12[col * 6 + t]; }
    p.turn = turn; p.castling = castling; p.ep = ep; p.halfmove = halfmove; p.fullmove = fullmove;
    if (!valid_root(&p)) return PDX_E_BOARD;
    return setup(&c->g[i], &p);
}

/* push a move given as from | to << 6 | promo << 12: 0, or PDX_E_ILLEGAL if it is not legal here,
   PDX_E_WINDOW, PDX_E_NOMEM, PDX_E_INDEX (the game unchanged) */
int pdx_core_push_move(Core *c, int i, int move) {
    if (bad_game(c, i)) return PDX_E_INDEX;
    Game *g = &c->g[i];
    for (int k = 0; k < g->nlegal; k++)
        if (g->legal[k] == move) return push(g, g->legal[k]);
    return PDX_E_ILLEGAL;
}

/* reason codes and plies of the current positions; 0 or PDX_E_INDEX (*where: the row) */
int pdx_core_status(Core *c, int n, const int32_t *games, int claim, int max_plies, int32_t *reason,
                    int32_t *plies, int32_t *where) {
    if (check_games(c, n, games, where)) return PDX_E_INDEX;
    for (int r = 0; r < n; r++) {
        const Game *g = &c->g[games[r]];
        reason[r] = end_reason(g, claim, max_plies);
        plies[r] = ply(&g->pos);
    }
    return PDX_OK;
}

static int find_slot(const Game *g, int64_t action) {
    for (int k = 0; k < g->nlegal; k++) if (g->legal_index[k] == action) return k;
    return -1;
}

/* play policy slot actions[r] in games[r], then status as above. Returns 0, or a code with *where =
   the first failing row: PDX_E_INDEX, PDX_E_ILLEGAL (no legal move has that slot), PDX_E_WINDOW,
   PDX_E_NOMEM. Every row is checked before any is played, so a failed call changed no game (when
   the rows name distinct games, as native_core.py makes sure: a repeated game is checked against its
   position before the call, and is checked again, and may fail, when played) */
int pdx_core_play(Core *c, int n, const int32_t *games, const int64_t *actions, int claim, int max_plies,
                  int32_t *reason, int32_t *plies, int32_t *where) {
    if (check_games(c, n, games, where)) return PDX_E_INDEX;
    for (int r = 0; r < n; r++) {
        Game *g = &c->g[games[r]];
        int k = find_slot(g, actions[r]);
        int e = k < 0 ? PDX_E_ILLEGAL : room(g, g->legal[k]);
        if (e) { *where = r; return e; }
    }
    for (int r = 0; r < n; r++) {
        Game *g = &c->g[games[r]];
        int k = find_slot(g, actions[r]);
        int e = k < 0 ? PDX_E_ILLEGAL : push(g, g->legal[k]);
        if (e) { *where = r; return e; }
        reason[r] = end_reason(g, claim, max_plies);
        plies[r] = ply(&g->pos);
    }
    return PDX_OK;
}

/* the packed planes of the games' current positions, (n, 100) words; 0 or PDX_E_INDEX */
int pdx_core_pack(Core *c, int n, const int32_t *games, uint64_t *out, int32_t *where) {
    if (check_games(c, n, games, where)) return PDX_E_INDEX;
    for (int r = 0; r < n; r++) pack_one(&c->g[games[r]], out + (size_t)r * 100);
    return PDX_OK;
}

/* Lc0's classic 112 planes (chesscore.encoding), (n, 112, 64) float32, fully overwritten; 0 or
   PDX_E_INDEX */
int pdx_core_encode(Core *c, int n, const int32_t *games, float *out, int32_t *where) {
    if (check_games(c, n, games, where)) return PDX_E_INDEX;
    for (int r = 0; r < n; r++) encode_one(&c->g[games[r]], out + (size_t)r * 112 * 64);
    return PDX_OK;
}

/* legal masks (n, 4288) uint8 (fully overwritten) and the legal policy indices in ascending order,
   (n, LEGAL_STRIDE) int64, padded with the row's first index; count (n,); 0 or PDX_E_INDEX */
int pdx_core_legal(Core *c, int n, const int32_t *games, uint8_t *mask, int64_t *index, int32_t *count,
                   int32_t *where) {
    if (check_games(c, n, games, where)) return PDX_E_INDEX;
    for (int r = 0; r < n; r++) {
        uint8_t *m = mask ? mask + (size_t)r * POLICY : NULL;
        count[r] = legal_row(&c->g[games[r]], index + (size_t)r * LEGAL_STRIDE, m);
    }
    return PDX_OK;
}

/* the game's moves from its root; returns how many (at most cap are written), or PDX_E_INDEX */
int pdx_core_moves(Core *c, int i, uint16_t *out, int cap) {
    if (bad_game(c, i)) return PDX_E_INDEX;
    const Game *g = &c->g[i];
    for (int k = 0; k < g->nmoves && k < cap; k++) out[k] = g->moves[k];
    return g->nmoves;
}

/* the current position's legal moves (out holds MAX_MOVES), in generation order; returns how many, or
   PDX_E_INDEX */
int pdx_core_legal_moves(Core *c, int i, uint16_t *out) {
    if (bad_game(c, i)) return PDX_E_INDEX;
    const Game *g = &c->g[i];
    memcpy(out, g->legal, (size_t)g->nlegal * sizeof *out);
    return g->nlegal;
}

/* occurrences of the current position since the last irreversible move, counting it; or PDX_E_INDEX */
int pdx_core_repetitions(Core *c, int i) { return bad_game(c, i) ? PDX_E_INDEX : c->g[i].reps; }

/* perft of game i's current position; or PDX_E_INDEX */
int64_t pdx_core_perft(Core *c, int i, int depth) {
    if (bad_game(c, i)) return PDX_E_INDEX;
    return depth <= 0 ? 1 : perft(&c->g[i].pos, depth);
}
