// The chat hot path, once more through PgBouncer in transaction mode (throughPooler).
import { throughPooler } from '@gensvc/testing';
import './chat.int.test';

throughPooler();
