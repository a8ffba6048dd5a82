/*
 * config.c - xl.cfg files, through Xen's own parser (libxlutil).
 *
 * libxlutil does the parsing, so the syntax is exactly xl's.  It cannot
 * enumerate the keys it read, nor say on which line a key was, nor tell a
 * number from a quoted string, so a small lexical scan of the text (scan_keys)
 * finds every `key =` with its line and the kind of value that follows.
 * Values come from libxlutil and go through vmb_guest_set(), the same path
 * the daemon's JSON descriptions take.  libxlutil's own messages (syntax
 * errors) are captured with open_memstream and turned into diagnostics.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libxlutil.h>

#include "vmb_internal.h"

#define CONFIG_MAX_BYTES	(1u << 20)	/* as the daemon's request limit */
#define CONFIG_MAX_KEYS		128
#define CONFIG_MAX_ITEMS	1024		/* list items, all levels */
/*
 * A quoted value, at most: a path, a command line (Linux takes 2048
 * bytes) and the like fit.  Checked before libxlutil sees the text: its
 * parser (Debian's 4.17) leaks the token it stands on at a syntax error,
 * which must not be a string of a megabyte.
 */
#define CONFIG_MAX_STRING	4096

enum value_kind { KIND_NUMBER, KIND_STRING, KIND_LIST };

#define ITEM_LINES	64	/* lines kept of a list's first items */

struct scanned_key {
	char	name[64];
	int	line;
	enum value_kind kind;
	bool	superseded;	/* set again further down */
	/*
	 * The line each item of a list starts on (its first ITEM_LINES),
	 * so that an error in the third disk of a list written over ten
	 * lines names the third disk's line.
	 */
	int	item_line[ITEM_LINES];
	unsigned nr_items;
};

struct scan {
	struct scanned_key keys[CONFIG_MAX_KEYS];
	size_t	n;
	bool	overflow;
	size_t	longest;	/* longest quoted string, quotes included */
	int	longest_line;
};

/*
 * Find `key =` (or `key +=`) at the start of each statement.  Statements
 * end at a newline or ';' outside brackets and strings; '#' starts a
 * comment.  Only as much of xl's grammar as that needs: libxlutil still
 * judges the syntax.
 */
static void
scan_keys(const char *t, size_t len, struct scan *sc)
{
	size_t i = 0;
	int line = 1;

	while (i < len) {
		size_t start, qstart = 0;
		int depth = 0, qline = 0;
		char quote = 0;
		bool item_open = false;
		struct scanned_key *cur = NULL;	/* this statement's key */

		/* Skip blanks, empty statements and comments. */
		while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' ||
		    t[i] == '\n' || t[i] == ';' || t[i] == '#')) {
			if (t[i] == '#')
				while (i < len && t[i] != '\n')
					i++;
			else if (t[i++] == '\n')
				line++;
		}
		if (i >= len)
			break;
		start = i;
		while (i < len && (t[i] == '_' || (t[i] >= 'a' && t[i] <= 'z') ||
		    (t[i] >= 'A' && t[i] <= 'Z') || (i > start && t[i] >= '0' &&
		    t[i] <= '9')))
			i++;
		if (i > start && i - start < sizeof(sc->keys[0].name)) {
			size_t j = i, namelen = i - start;

			while (j < len && (t[j] == ' ' || t[j] == '\t'))
				j++;
			if (j + 1 < len && t[j] == '+' && t[j + 1] == '=')
				j++;
			if (j < len && t[j] == '=') {
				struct scanned_key *k;

				j++;
				while (j < len && (t[j] == ' ' || t[j] == '\t'))
					j++;
				if (sc->n == CONFIG_MAX_KEYS) {
					sc->overflow = true;
				} else {
					k = &sc->keys[sc->n++];
					memcpy(k->name, t + start, namelen);
					k->name[namelen] = '\0';
					k->line = line;
					k->superseded = false;
					k->kind = j < len && (t[j] == '"' ||
					    t[j] == '\'') ? KIND_STRING :
					    j < len && t[j] == '[' ? KIND_LIST :
					    KIND_NUMBER;
					k->nr_items = 0;
					cur = k;
				}
			}
		}
		/* Skip to the end of the statement. */
		while (i < len) {
			char c = t[i];

			/* An item of the key's list starts here. */
			if (!quote && depth == 1 && cur && cur->kind ==
			    KIND_LIST && c != ' ' && c != '\t' && c != '\n' &&
			    c != '\r' && c != ',' && c != ']' && c != '#' &&
			    !item_open) {
				if (cur->nr_items < ITEM_LINES)
					cur->item_line[cur->nr_items] = line;
				cur->nr_items++;
				item_open = true;
			}
			if (!quote && depth == 1 && c == ',')
				item_open = false;
			if (quote) {
				if (c == '\\' && quote == '"' && i + 1 < len)
					i++;
				else if (c == quote)
					quote = 0;
				else if (c == '\n')
					line++;
				if (i + 1 - qstart > sc->longest) {
					sc->longest = i + 1 - qstart;
					sc->longest_line = qline;
				}
			} else if (c == '"' || c == '\'') {
				quote = c;
				qstart = i;
				qline = line;
			} else if (c == '[') {
				depth++;
			} else if (c == ']') {
				depth--;
			} else if (c == '#') {
				while (i + 1 < len && t[i + 1] != '\n')
					i++;
			} else if (c == '\n') {
				if (depth <= 0)
					break;
				line++;
			} else if (c == ';' && depth <= 0) {
				break;
			}
			i++;
		}
	}
	/* libxlutil keeps the last assignment of a key; mark the others. */
	for (size_t a = 0; a < sc->n; a++)
		for (size_t b = a + 1; b < sc->n; b++)
			if (!strcmp(sc->keys[a].name, sc->keys[b].name)) {
				sc->keys[a].superseded = true;
				break;
			}
}

/* "FILE:LINE: message" lines from libxlutil's report into diagnostics. */
static void
report_to_diags(const char *report, const char *where, const struct scan *sc,
    struct vmb_diags *diags, bool as_errors)
{
	size_t wl = strlen(where);
	const char *p = report;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *key = "";
		char msg[256];
		int line = 0;
		enum vmb_severity sev = as_errors ? VMB_ERROR : VMB_WARNING;

		if (n > wl + 1 && !strncmp(p, where, wl) && p[wl] == ':') {
			const char *q = p + wl + 1;
			char *end;

			line = (int)strtol(q, &end, 10);
			if (end != q && *end == ':') {
				q = end + 1;
				while (*q == ' ')
					q++;
				n -= (size_t)(q - p);
				p = q;
			} else {
				line = 0;
			}
		}
		if (n > 9 && !strncmp(p, "warning: ", 9)) {
			sev = VMB_WARNING;
			p += 9;
			n -= 9;
		}
		for (size_t i = 0; i < sc->n; i++)
			if (sc->keys[i].line == line)
				key = sc->keys[i].name;
		snprintf(msg, sizeof(msg), "%.*s", (int)n, p);
		if (n)
			vmb__diag_add(diags, sev, where, line, key, "%s", msg);
		p = nl ? nl + 1 : NULL;
	}
}

static void free_value(struct vmb_value *v);

/* An XLU list into a vmb_value list; items of lists are strings. */
static int
convert_list(const XLU_Config *cfg, const XLU_ConfigList *l, int line,
    const struct scanned_key *k, int depth, size_t *budget,
    struct vmb_value *out)
{
	struct vmb_value *items = NULL;
	size_t n = 0;
	XLU_ConfigValue *v;

	out->type = VMB_VALUE_LIST;
	out->line = line;
	out->u.list.v = NULL;
	out->u.list.n = 0;
	if (depth > 4)
		return -E2BIG;
	while ((v = xlu_cfg_get_listitem2(l, (int)n)) != NULL) {
		struct vmb_value *grown;
		int rc;

		if (*budget == 0) {
			free(items);
			return -E2BIG;
		}
		(*budget)--;
		grown = realloc(items, (n + 1) * sizeof(*items));
		if (!grown) {
			free(items);
			return -ENOMEM;
		}
		items = grown;
		items[n].type = VMB_VALUE_STRING;
		if (xlu_cfg_value_type(v) == XLU_LIST) {
			XLU_ConfigList *sub;

			rc = xlu_cfg_value_get_list(cfg, v, &sub, 1);
			if (!rc)
				rc = convert_list(cfg, sub, line, NULL,
				    depth + 1, budget, &items[n]);
			else
				rc = -rc;
		} else {
			char *s;

			rc = xlu_cfg_value_get_string(cfg, v, &s, 1);
			items[n].type = VMB_VALUE_STRING;
			/* Where the item is, when the scan saw it. */
			items[n].line = k && n < ITEM_LINES && n < k->nr_items ?
			    k->item_line[n] : line;
			items[n].u.s = s;
			rc = rc ? -rc : 0;
		}
		if (rc) {
			/* items[0..n) are complete; free their sublists. */
			free_value(&items[n]);
			out->u.list.v = items;
			out->u.list.n = n;
			return rc;
		}
		n++;
	}
	out->u.list.v = items;
	out->u.list.n = n;
	return 0;
}

static void
free_value(struct vmb_value *v)
{
	if (v->type != VMB_VALUE_LIST)
		return;
	for (size_t i = 0; i < v->u.list.n; i++)
		free_value((struct vmb_value *)&v->u.list.v[i]);
	free((void *)v->u.list.v);
	v->u.list.v = NULL;
	v->u.list.n = 0;
}

/* Hand one scanned key's value to vmb_guest_set(). */
static int
set_key(struct vmb_guest *g, const XLU_Config *cfg,
    const struct scanned_key *k, const char *where, struct vmb_diags *diags)
{
	struct vmb_value v = { .line = k->line };
	size_t budget = CONFIG_MAX_ITEMS;
	const char *s;
	int rc;

	if (k->kind == KIND_LIST) {
		XLU_ConfigList *l;

		rc = xlu_cfg_get_list(cfg, k->name, &l, NULL, 1);
		if (rc)
			return 0;	/* libxlutil did not keep it */
		rc = convert_list(cfg, l, k->line, k, 0, &budget, &v);
		if (rc == -E2BIG)
			rc = vmb__diag_add(diags, VMB_ERROR, where, k->line,
			    k->name, "list too large or too deeply nested");
		if (!rc)
			rc = vmb_guest_set(g, k->name, &v, where, diags);
		free_value(&v);
		return rc;
	}
	rc = xlu_cfg_get_string(cfg, k->name, &s, 1);
	if (rc)
		return 0;
	v.type = VMB_VALUE_STRING;
	v.u.s = s;
	if (k->kind == KIND_NUMBER) {
		char *end;
		long long x;

		errno = 0;
		x = strtoll(s, &end, 0);
		/* "12a" stays a string, so the setter names it. */
		if (*s && !*end && !errno) {
			v.type = VMB_VALUE_INT;
			v.u.i = x;
		}
	}
	return vmb_guest_set(g, k->name, &v, where, diags);
}

/*
 * xl builds a config without type (or builder) as a PV guest on x86: a
 * kernel meant for PV would be misread if built as PVH, so the type is
 * never guessed.  builder = "hvm" is type = "hvm" (keys_hvm.c).
 */
static void
check_type(const struct vmb_guest *g, const struct scan *sc,
    const char *where, struct vmb_diags *diags)
{
	(void)sc;
	if (g->keys_given & (1ull << VMB_KEY_TYPE | 1ull << VMB_KEY_BUILDER))
		return;
	vmb__diag_add(diags, VMB_ERROR, where, 0, "type", "missing: xl "
	    "builds a config without type as a PV guest, which vmbuild does "
	    "not do; add type = \"pvh\" to boot this kernel as PVH, or "
	    "type = \"hvm\" for an HVM guest");
}

/*
 * libxlutil stops at its first syntax error.  So that a config with five
 * mistakes gets five lines at once, the statement a syntax error is in
 * is reported, blanked and the text read again, up to SYNTAX_RETRIES
 * times.  The statement is taken to run from the last `key =` at or
 * before the error's line up to the next key's line (a list may span
 * lines), or to the error's line where no key follows (an unterminated
 * string hides the keys after it from scan_keys); blanking keeps the
 * newlines, so later lines keep their numbers.  Its key counts as given: one mistake, one line, not also
 * "missing".
 */
#define SYNTAX_RETRIES	16

/* The line of a "WHERE:LINE: ..." message of libxlutil's, or 0. */
static int
report_line(const char *msg, const char *where)
{
	size_t wl = strlen(where);
	char *end;
	long line;

	if (strncmp(msg, where, wl) != 0 || msg[wl] != ':')
		return 0;
	line = strtol(msg + wl + 1, &end, 10);
	return end != msg + wl + 1 && *end == ':' && line > 0 &&
	    line < 1000000 ? (int)line : 0;
}

static bool blank_statement(char *t, size_t len, const struct scan *sc,
    int line, struct vmb_guest *g);

/*
 * The messages of one failed read: those not told by an earlier read
 * (libxlutil goes on after some errors, so a read may repeat what the
 * one before said) go to `diags`, and each one's statement is blanked.
 * `seen` holds the lines told so far; false when nothing new was
 * blanked (reading again would fail the same way).
 */
static bool
report_and_blank(char *report, const char *where, const struct scan *sc,
    struct vmb_guest *g, char *t, size_t len, int *seen, int *nseen,
    bool first, struct vmb_diags *diags)
{
	bool blanked = false;

	for (char *p = report, *nl; p && *p; p = nl ? nl + 1 : NULL) {
		int line = report_line(p, where), i;

		if ((nl = strchr(p, '\n')) != NULL)
			*nl = '\0';
		for (i = 0; i < *nseen && seen[i] != line; i++)
			;
		if (line == 0 ? !first : i < *nseen)
			continue;
		report_to_diags(p, where, sc, diags, true);
		if (line == 0 || *nseen == SYNTAX_RETRIES)
			continue;
		seen[(*nseen)++] = line;
		if (t && blank_statement(t, len, sc, line, g))
			blanked = true;
	}
	return blanked;
}

/* Blank the statement around `line` in `t`; false when nothing changed. */
static bool
blank_statement(char *t, size_t len, const struct scan *sc, int line,
    struct vmb_guest *g)
{
	const struct scanned_key *k = NULL;
	int from = line, to = 0, at = 1;
	bool changed = false;

	for (size_t i = 0; i < sc->n; i++) {
		if (sc->keys[i].line <= line &&
		    (!k || sc->keys[i].line >= k->line))
			k = &sc->keys[i];
		else if (sc->keys[i].line > line &&
		    (!to || sc->keys[i].line < to))
			to = sc->keys[i].line;
	}
	if (k) {
		from = k->line;
		for (size_t i = 0; i < VMB_KEY_MAX; i++)
			if (!strcmp(vmb__keys[i].name, k->name)) {
				g->keys_given |= 1ull << i;
				g->key_line[i] = k->line;
			}
	}
	for (size_t i = 0; i < len; i++) {
		if (t[i] == '\n') {
			at++;
			continue;
		}
		if (at >= from && (at <= line || (to && at < to)) &&
		    t[i] != ' ') {
			t[i] = ' ';
			changed = true;
		}
	}
	return changed;
}

/*
 * Read `text` into *ret_cfg (messages to *rep), blanking statements with
 * syntax errors (reported in `diags`) as above.  0, or -EINVAL when the
 * text could not be read at all, -ENOMEM.  *work is the blanked copy the
 * caller frees (NULL when the text read at once).
 */
static int
read_recovering(const char *text, size_t len, const char *where,
    const struct scan *sc, struct vmb_guest *g, XLU_Config **ret_cfg,
    FILE **rep, char **report, size_t *report_len, char **work,
    struct vmb_diags *diags)
{
	int seen[SYNTAX_RETRIES], nseen = 0;
	const char *cur = text;

	for (int tries = 0;; tries++) {
		size_t before = diags ? diags->nr_errors : 0;
		bool again;
		int rc;

		*rep = open_memstream(report, report_len);
		if (!*rep || !(*ret_cfg = xlu_cfg_init(*rep, where)))
			return -ENOMEM;
		rc = xlu_cfg_readdata(*ret_cfg, cur, (int)len);
		fflush(*rep);
		if (rc == 0)
			return 0;
		xlu_cfg_destroy(*ret_cfg);
		*ret_cfg = NULL;
		fclose(*rep);
		*rep = NULL;
		if (!*work && (*work = malloc(len + 1)) != NULL) {
			memcpy(*work, text, len);
			(*work)[len] = '\0';
		}
		again = report_and_blank(*report ? *report : NULL, where, sc,
		    g, *work, len, seen, &nseen, tries == 0, diags);
		free(*report);
		*report = NULL;
		if (tries == 0 && (!diags || diags->nr_errors == before))
			vmb__diag_add(diags, VMB_ERROR, where, 0, "",
			    "cannot parse: %s", strerror(rc));
		if (!*work)
			return -ENOMEM;
		if (!again || tries == SYNTAX_RETRIES)
			return -EINVAL;
		cur = *work;
	}
}

int
vmb_config_parse_text(const char *text, size_t len, const char *where,
    const char *basedir, struct vmb_guest **ret_guest,
    struct vmb_diags *diags)
{
	return vmb_config_parse(text, len, where, basedir, VMB_CHECK_FILES,
	    ret_guest, diags);
}

int
vmb_config_parse(const char *text, size_t len, const char *where,
    const char *basedir, unsigned flags, struct vmb_guest **ret_guest,
    struct vmb_diags *diags)
{
	struct vmb_guest *g = NULL;
	XLU_Config *cfg = NULL;
	struct scan *sc = NULL;
	char *report = NULL, *work = NULL;
	size_t report_len = 0;
	FILE *rep = NULL;
	size_t errors_before;
	int rc;

	if (!text || !ret_guest)
		return -EINVAL;
	if (!where)
		where = "config";
	errors_before = diags ? diags->nr_errors : 0;
	if (len > CONFIG_MAX_BYTES) {
		rc = vmb__diag_add(diags, VMB_ERROR, where, 0, "",
		    "larger than %u bytes", CONFIG_MAX_BYTES);
		goto out;
	}
	if (memchr(text, '\0', len)) {
		rc = vmb__diag_add(diags, VMB_ERROR, where, 0, "",
		    "contains a NUL byte (not a text file?)");
		goto out;
	}
	sc = calloc(1, sizeof(*sc));
	rc = vmb_guest_new(&g);
	if (rc || !sc) {
		rc = -ENOMEM;
		goto out;
	}
	g->flags = flags & ~VMB_CONFIG_NO_CHECK;
	scan_keys(text, len, sc);
	if (sc->longest > CONFIG_MAX_STRING + 2) {
		rc = vmb__diag_add(diags, VMB_ERROR, where, sc->longest_line, "",
		    "a quoted value of %zu bytes (at most %d)", sc->longest - 2,
		    CONFIG_MAX_STRING);
		goto out;
	}
	rc = read_recovering(text, len, where, sc, g, &cfg, &rep, &report,
	    &report_len, &work, diags);
	if (rc)
		goto out;
	/* What is set is what was read: the blanked statements are not. */
	if (work) {
		memset(sc, 0, sizeof(*sc));
		scan_keys(work, len, sc);
	}
	if (sc->overflow)
		vmb__diag_add(diags, VMB_ERROR, where, 0, "",
		    "more than %d settings", CONFIG_MAX_KEYS);
	/*
	 * The guest's type first (type=, builder=), silently: how its vif=
	 * items read depends on it (an HVM guest's model=, type=ioemu).
	 * Set again in order below, with what it has to say.
	 */
	for (size_t i = 0; i < sc->n; i++) {
		const struct scanned_key *k = &sc->keys[i];

		if (!k->superseded && (!strcmp(k->name, "type") ||
		    !strcmp(k->name, "builder")) &&
		    set_key(g, cfg, k, where, NULL) == -ENOMEM) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < sc->n; i++) {
		const struct scanned_key *k = &sc->keys[i];

		if (k->superseded) {
			for (size_t j = i + 1; j < sc->n; j++)
				if (!strcmp(sc->keys[j].name, k->name)) {
					vmb__diag_add(diags, VMB_WARNING, where,
					    sc->keys[j].line, k->name, "set "
					    "again (first at line %d); the "
					    "last value is used", k->line);
					break;
				}
			continue;
		}
		rc = set_key(g, cfg, k, where, diags);
		if (rc == -ENOMEM)
			goto out;
	}
	/* Warnings libxlutil printed while we read values. */
	fflush(rep);
	if (report && *report)
		report_to_diags(report, where, sc, diags, false);
	check_type(g, sc, where, diags);
	/*
	 * The whole-description checks run even after errors, so that a
	 * config with five mistakes gets five lines at once: a key whose
	 * value was refused counts as given, not missing (keys_given).
	 */
	free(g->source);
	g->source = strdup(where);
	if (!g->source) {
		rc = -ENOMEM;
		goto out;
	}
	/* VMB_CONFIG_NO_CHECK: the caller changes it, then checks. */
	if (!(flags & VMB_CONFIG_NO_CHECK))
		rc = vmb_guest_check(g, basedir, where, flags, diags);
	else
		rc = diags && diags->nr_errors != errors_before ? -EINVAL : 0;
	if (!rc && diags && diags->nr_errors != errors_before)
		rc = -EINVAL;
	if (rc && (rc != -EINVAL || !(flags & VMB_CONFIG_KEEP_INVALID)))
		goto out;
	*ret_guest = g;
	g = NULL;
out:
	if (cfg)
		xlu_cfg_destroy(cfg);
	if (rep)
		fclose(rep);
	free(report);
	free(work);
	free(sc);
	vmb_guest_free(g);
	return rc;
}

int
vmb_config_parse_file(const char *path, struct vmb_guest **ret_guest,
    struct vmb_diags *diags)
{
	return vmb_config_load(path, VMB_CHECK_FILES, ret_guest, diags);
}

int
vmb_config_load(const char *path, unsigned flags, struct vmb_guest **ret_guest,
    struct vmb_diags *diags)
{
	char *text = NULL, *dircopy = NULL;
	FILE *f = NULL;
	struct stat st;
	size_t len;
	int rc;

	if (!path || !ret_guest)
		return -EINVAL;
	f = fopen(path, "re");
	if (!f) {
		rc = -errno;
		vmb__diag_add(diags, VMB_ERROR, path, 0, "", "cannot open: %s",
		    strerror(-rc));
		goto out;
	}
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = vmb__diag_add(diags, VMB_ERROR, path, 0, "",
		    "not a regular file");
		goto out;
	}
	if (st.st_size > CONFIG_MAX_BYTES) {
		rc = vmb__diag_add(diags, VMB_ERROR, path, 0, "",
		    "larger than %u bytes", CONFIG_MAX_BYTES);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		rc = -ENOMEM;
		goto out;
	}
	len = fread(text, 1, (size_t)st.st_size, f);
	if (ferror(f)) {
		rc = -EIO;
		vmb__diag_add(diags, VMB_ERROR, path, 0, "", "read error");
		goto out;
	}
	text[len] = '\0';
	dircopy = strdup(path);
	if (!dircopy) {
		rc = -ENOMEM;
		goto out;
	}
	/* Relative kernel paths are relative to the config's directory. */
	rc = vmb_config_parse(text, len, path, dirname(dircopy), flags,
	    ret_guest, diags);
out:
	if (f)
		fclose(f);
	free(text);
	free(dircopy);
	return rc;
}
