-- nmtune tuning database, schema version 4: the checksum of the kernel's own family beside
-- every measurement.
--
-- template_checksum covers the templates of every family that may serve the row's problem:
-- the tuner resumes and re-tunes by it, since a change to any of them changes the search. The
-- timing of one kernel, though, describes only the code of its own family's templates, so a
-- change to another family's template leaves it valid (a decode-family winner at m = 1 stays
-- what it was when the tiled template changes). kernel_checksum is that family's checksum
-- (codegen's family_checksum): the runtime launches a row whose kernel_checksum is current
-- even where its template_checksum is not. NULL for rows recorded before this schema, which
-- stay current only by template_checksum.
ALTER TABLE measurements ADD COLUMN kernel_checksum TEXT;

UPDATE meta SET value = '4' WHERE key = 'schema_version';
